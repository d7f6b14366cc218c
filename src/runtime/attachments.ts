import fs from 'node:fs';
import type { WorkerTaskPool } from './worker-pool/pool.js';
import { decodeEncoded, type AttachmentTasks, type EncodedFile } from './tasks/attachments.js';

/**
 * Attachment encoding for media handling (src/runner/media): base64 of saved images and PDFs for native content
 * blocks. Files from `inlineBelowBytes` up are encoded on the pool's workers, so a 30 MB PDF never stalls the poll
 * loop; small ones here, where a worker round trip would cost more than the work. Pool errors (`overloaded`, …)
 * reach the caller: the runner records them on the batch and never retries on its own.
 */
export const DEFAULT_INLINE_ATTACHMENT_BYTES = 64 * 1024;

export class AttachmentCodec {
  constructor(
    private readonly pool: WorkerTaskPool<AttachmentTasks> | undefined,
    private readonly inlineBelowBytes = DEFAULT_INLINE_ATTACHMENT_BYTES,
  ) {}

  /** Read `file` and base64-encode it. */
  async encodeFile(file: string, signal?: AbortSignal): Promise<EncodedFile> {
    const { size } = await fs.promises.stat(file);
    if (!this.pool || size < this.inlineBelowBytes) return { data: fs.readFileSync(file).toString('base64'), size };
    return decodeEncoded(await this.pool.run('encodeFile', { input: { path: file }, inputBytes: size, signal }));
  }
}
