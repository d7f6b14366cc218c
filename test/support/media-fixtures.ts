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
