import fs from 'node:fs';

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
  encodeFile: { input: { path: string }; output: EncodedFile };
};

/** Read a file and base64-encode it (Claude's native image / document content blocks). */
export function encodeFile({ path }: AttachmentTasks['encodeFile']['input']): EncodedFile {
  const bytes = fs.readFileSync(path);
  return { data: bytes.toString('base64'), size: bytes.length };
}
