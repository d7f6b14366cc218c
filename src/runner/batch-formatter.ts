import type { Logger } from '../shared/log.js';
import type { FormatTasks } from './format-task.js';
import { isWorkerTaskError } from '../runtime/worker-pool/errors.js';
import type { WorkerTaskPool } from '../runtime/worker-pool/pool.js';
import { formatBatch, type FormatOptions, type FormattableMessage } from './format.js';

/**
 * `formatBatch` for the start of a query: batches of at least `workerAboveBytes` of content are formatted on a
 * worker thread, so a huge burst never blocks the poll loop (heartbeats, wake-ups). The result is the same string
 * either way. When the pool refuses or fails, the batch is formatted here instead, with a warning: the work is pure
 * and must be done anyway, so this is not a retry on something else.
 */
export class BatchFormatter {
  constructor(
    private readonly pool: WorkerTaskPool<FormatTasks> | undefined,
    private readonly workerAboveBytes: number,
    private readonly log: Logger,
  ) {}

  async format(messages: FormattableMessage[], options: FormatOptions): Promise<string> {
    const bytes = messages.reduce((sum, message) => sum + message.row.content.length, 0);
    if (!this.pool || bytes < this.workerAboveBytes) return formatBatch(messages, options);
    const started = Date.now();
    try {
      const prompt = await this.pool.run('formatBatch', { input: { messages, options }, inputBytes: bytes });
      this.log.info(
        `formatted ${messages.length} message${messages.length === 1 ? '' : 's'} (${Math.round(bytes / 1024)} KiB) on a worker in ${Date.now() - started} ms`,
      );
      return prompt;
    } catch (err) {
      if (!isWorkerTaskError(err)) throw err;
      this.log.warn(`formatting on a worker failed (${err.reason}: ${err.message}); formatting on the main thread`);
      return formatBatch(messages, options);
    }
  }
}
