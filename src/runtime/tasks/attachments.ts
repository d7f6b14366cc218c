import fs from 'node:fs';
import { withTransfer } from '../worker-pool/transfer.js';

/**
 * Attachment encoding, run on a pool worker for large files (see src/runtime/attachments.ts) and inline for small
 * ones. Named exports are the worker tasks; each is a plain function of plain data. Type detection stays with the
 * media code (src/runner/media/prepare.ts, `file-type`), which decides what to encode.
 */
export interface EncodedFile {
  /** base64 of the whole file */
  data: string;
  size: number;
}

export type AttachmentTasks = {
  /** the base64 text as ASCII bytes, transferred rather than copied (see transfer.ts) */
  encodeFile: { input: { path: string }; output: { base64: ArrayBuffer; size: number } };
};

/** Read a file and base64-encode it (Claude's native image / document content blocks). */
export function encodeFile({ path }: AttachmentTasks['encodeFile']['input']): AttachmentTasks['encodeFile']['output'] {
  const bytes = fs.readFileSync(path);
  const encoded = Buffer.from(bytes.toString('base64'), 'latin1');
  // Transfer needs an ArrayBuffer of exactly the encoded bytes: large Buffers own theirs; small ones share a pooled
  // one that must not move, so they are copied.
  const whole = encoded.byteOffset === 0 && encoded.length === encoded.buffer.byteLength;
  const base64 = whole ? (encoded.buffer as ArrayBuffer) : encoded.buffer.slice(encoded.byteOffset, encoded.byteOffset + encoded.length);
  return withTransfer({ base64, size: bytes.length }, [base64]);
}

/** The caller's side: ASCII bytes back to the base64 string. */
export function decodeEncoded({ base64, size }: AttachmentTasks['encodeFile']['output']): EncodedFile {
  return { data: Buffer.from(base64).toString('latin1'), size };
}
