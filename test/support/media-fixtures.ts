import { randomFillSync } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

/** Small files whose first bytes are real signatures of their types, for media tests. */
const hex = (h: string): Buffer => Buffer.from(h, 'hex');

export const FIXTURES = {
  png: Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64'),
  jpg: Buffer.concat([hex('ffd8ffe000104a46494600010100000100010000'), Buffer.alloc(64)]),
  gif: Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(32)]),
  webp: Buffer.concat([Buffer.from('RIFF'), hex('24000000'), Buffer.from('WEBPVP8 '), Buffer.alloc(40)]),
  pdf: Buffer.from('%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n'),
  wav: Buffer.concat([Buffer.from('RIFF'), hex('24000000'), Buffer.from('WAVEfmt '), Buffer.alloc(40)]),
  mp4: Buffer.concat([hex('00000018'), Buffer.from('ftypmp42'), hex('00000000'), Buffer.from('mp42isom'), Buffer.alloc(32)]),
  zip: Buffer.concat([hex('504b0304140000000000'), Buffer.alloc(40)]),
  csv: Buffer.from('a,b\n1,2\n'),
} as const;

/**
 * A real PNG of about `bytes` bytes: an RGB image of random (incompressible) pixels, so the file is as large as asked
 * and still decodes. For tests of large attachments going through the worker pool.
 */
export function largePng(bytes: number): Buffer {
  const width = 256;
  const height = Math.max(1, Math.ceil(bytes / (width * 3 + 1)));
  const raw = Buffer.alloc(height * (width * 3 + 1));
  for (let y = 0; y < height; y++) randomFillSync(raw, y * (width * 3 + 1) + 1, width * 3);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    hex('89504e470d0a1a0a'),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(raw, { level: 0 })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}
