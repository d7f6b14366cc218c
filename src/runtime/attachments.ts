import fs from 'node:fs';
import type { WorkerTaskPool } from './worker-pool/pool.js';
import { encodeFile, saveBase64, type AttachmentTasks, type EncodedFile, type SavedFile } from './tasks/attachments.js';

/**
 * Attachment encoding for media handling (SPEC §3 "media"): base64 for Claude's image/PDF blocks, decoding inbound
 * `data` into `downloads/`, MIME sniffing. Files from `inlineBelowBytes` up run on the pool's workers, so a 20 MB PDF
 * never stalls the poll loop; small ones run here, where a worker round trip would cost more than the work.
 * Pool errors (`overloaded`, …) reach the caller: the runner records them on the batch, it does not retry.
 */
export const DEFAULT_INLINE_ATTACHMENT_BYTES = 64 * 1024;

export interface CodecCallOptions {
  declaredMimeType?: string;
  signal?: AbortSignal;
}

export class AttachmentCodec {
  constructor(
    private readonly pool: WorkerTaskPool<AttachmentTasks> | undefined,
    private readonly inlineBelowBytes = DEFAULT_INLINE_ATTACHMENT_BYTES,
  ) {}

  /** Read `file`, sniff its type and base64-encode it. */
  async encodeFile(file: string, options: CodecCallOptions = {}): Promise<EncodedFile> {
    const { size } = await fs.promises.stat(file);
    const input = { path: file, declaredMimeType: options.declaredMimeType };
    if (!this.pool || size < this.inlineBelowBytes) return encodeFile(input);
    return this.pool.run('encodeFile', { input, inputBytes: size, signal: options.signal });
  }

  /** Decode base64 `data` into `file` (parent folders are created) and sniff its type. */
  async saveBase64(data: string, file: string, options: CodecCallOptions = {}): Promise<SavedFile> {
    const input = { data, path: file, declaredMimeType: options.declaredMimeType };
    if (!this.pool || data.length < this.inlineBelowBytes) return saveBase64(input);
    return this.pool.run('saveBase64', { input, inputBytes: data.length, signal: options.signal });
  }
}
