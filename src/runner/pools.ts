import { settingsSchema } from '../shared/settings.js';
import { describeIssues } from '../db/content.js';
import { AttachmentCodec } from '../runtime/attachments.js';
import type { AttachmentTasks } from '../runtime/tasks/attachments.js';
import type { FormatTasks } from './format-task.js';
import { subscribeTaskEvents } from '../runtime/worker-pool/diagnostics.js';
import { WorkerTaskPool } from '../runtime/worker-pool/pool.js';
import { isDebugLogging, type Logger } from '../shared/log.js';
import { PincerError } from '../shared/errors.js';

/**
 * The runner's worker pools: one for attachment encoding, one for formatting very large batches. Both draw from the
 * process-wide CPU admission (max(1, cores − 1), or PINCER_WORKER_PARALLELISM). Created once at start-up, closed at
 * stop.
 */
const EnvSchema = settingsSchema(['PINCER_FORMAT_WORKER_BYTES', 'PINCER_ATTACHMENT_WORKER_BYTES']);

export interface RunnerPools {
  format: WorkerTaskPool<FormatTasks>;
  /** batches whose content is at least this many bytes are formatted on a worker */
  formatWorkerBytes: number;
  attachments: AttachmentCodec;
  close(): Promise<void>;
}

export function createRunnerPools(env: NodeJS.ProcessEnv, log?: Logger): RunnerPools {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) throw new PincerError('config', `bad environment: ${describeIssues(parsed.error)}`);
  const format = new WorkerTaskPool<FormatTasks>({ name: 'format', tasks: new URL('./format-task.js', import.meta.url) });
  const attachmentPool = new WorkerTaskPool<AttachmentTasks>({
    name: 'attachments',
    tasks: new URL('../runtime/tasks/attachments.js', import.meta.url),
  });
  // With PINCER_LOG_LEVEL=debug, every task's diagnostics event becomes a log line; otherwise nobody subscribes.
  const unsubscribe =
    log && isDebugLogging()
      ? subscribeTaskEvents((e) =>
          log.debug(
            `worker task ${e.pool}/${e.task} ${e.outcome}: queue ${ms(e.queueMs)}, prepare ${ms(e.prepareMs)}, run ${ms(e.runMs)}${e.coldStart ? ' (new worker)' : ''}, ${e.inputBytes} bytes, ${e.pendingTasks} pending`,
          ),
        )
      : () => undefined;
  return {
    format,
    formatWorkerBytes: parsed.data.PINCER_FORMAT_WORKER_BYTES,
    attachments: new AttachmentCodec(attachmentPool, parsed.data.PINCER_ATTACHMENT_WORKER_BYTES),
    close: async () => {
      await Promise.all([format.close(), attachmentPool.close()]);
      unsubscribe();
    },
  };
}

function ms(value: number): string {
  return `${value.toFixed(1)} ms`;
}
