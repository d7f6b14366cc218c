/**
 * Content sniffing for attachments: the MIME type from the first bytes, because a sender's `mimeType` and file name
 * may be missing or wrong, and Claude only accepts image and PDF blocks whose declared type matches the bytes.
 */
interface Signature {
  mimeType: string;
  /** bytes at `offset`; `null` matches any byte */
  bytes: (number | null)[];
  offset?: number;
}

const ascii = (text: string): number[] => [...text].map((c) => c.charCodeAt(0));

const SIGNATURES: Signature[] = [
  { mimeType: 'image/png', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { mimeType: 'image/jpeg', bytes: [0xff, 0xd8, 0xff] },
  { mimeType: 'image/gif', bytes: ascii('GIF8') },
  { mimeType: 'image/webp', bytes: [...ascii('RIFF'), null, null, null, null, ...ascii('WEBP')] },
  { mimeType: 'application/pdf', bytes: ascii('%PDF-') },
  { mimeType: 'audio/wav', bytes: [...ascii('RIFF'), null, null, null, null, ...ascii('WAVE')] },
  { mimeType: 'audio/ogg', bytes: ascii('OggS') },
  { mimeType: 'audio/mpeg', bytes: ascii('ID3') },
  { mimeType: 'audio/flac', bytes: ascii('fLaC') },
  { mimeType: 'video/mp4', bytes: ascii('ftyp'), offset: 4 },
  { mimeType: 'video/webm', bytes: [0x1a, 0x45, 0xdf, 0xa3] },
  { mimeType: 'application/zip', bytes: [0x50, 0x4b, 0x03, 0x04] },
];

/** The MIME type the bytes start with, or undefined when no known signature matches. */
export function sniffMimeType(bytes: Uint8Array): string | undefined {
  for (const { mimeType, bytes: signature, offset = 0 } of SIGNATURES) {
    if (bytes.length < offset + signature.length) continue;
    if (signature.every((byte, i) => byte === null || bytes[offset + i] === byte)) return mimeType;
  }
  return undefined;
}

export type AttachmentType = 'image' | 'pdf' | 'audio' | 'video' | 'file';

/** The attachment `type` of SPEC §2 for a MIME type. */
export function attachmentTypeOf(mimeType: string | undefined): AttachmentType {
  if (!mimeType) return 'file';
  if (mimeType === 'application/pdf') return 'pdf';
  const family = mimeType.split('/', 1)[0];
  return family === 'image' || family === 'audio' || family === 'video' ? family : 'file';
}
