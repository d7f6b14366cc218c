import fs from 'node:fs';
import path from 'node:path';
import { attachmentTypeOf, sniffMimeType, type AttachmentType } from './sniff.js';

/**
 * Attachment encoding, run on a pool worker for large files (see src/runtime/attachments.ts) and inline for small
 * ones. Named exports are the worker tasks; each is a plain function of plain data.
 */
export interface EncodedFile {
  /** sniffed from the bytes; falls back to `declaredMimeType`, then `application/octet-stream` */
  mimeType: string;
  type: AttachmentType;
  /** base64 of the whole file */
  data: string;
  size: number;
}

export interface SavedFile {
  path: string;
  mimeType: string;
  type: AttachmentType;
  size: number;
}

export type AttachmentTasks = {
  encodeFile: { input: { path: string; declaredMimeType?: string }; output: EncodedFile };
  saveBase64: { input: { data: string; path: string; declaredMimeType?: string }; output: SavedFile };
};

/** Read a file and base64-encode it (Claude's image/document content blocks). */
export function encodeFile({ path: file, declaredMimeType }: AttachmentTasks['encodeFile']['input']): EncodedFile {
  const bytes = fs.readFileSync(file);
  const mimeType = sniffMimeType(bytes) ?? declaredMimeType ?? 'application/octet-stream';
  return { mimeType, type: attachmentTypeOf(mimeType), data: bytes.toString('base64'), size: bytes.length };
}

/** Decode an inbound attachment's base64 `data` and write it to `path` (downloads/<message-id>/<name>). */
export function saveBase64({ data, path: file, declaredMimeType }: AttachmentTasks['saveBase64']['input']): SavedFile {
  const bytes = Buffer.from(data, 'base64');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, bytes);
  const mimeType = sniffMimeType(bytes) ?? declaredMimeType ?? 'application/octet-stream';
  return { path: file, mimeType, type: attachmentTypeOf(mimeType), size: bytes.length };
}
