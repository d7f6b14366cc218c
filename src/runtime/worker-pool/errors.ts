import { ReasonedError, type ErrorCode } from '../../shared/errors.js';
/**
 * Errors of the worker-task pool. Codes:
 * - `overloaded`: the pool's pending-task or pending-byte limit was reached; the task was refused before its input
 *   was built. `details` carries the limit that was hit. Retry later or do the work another way.
 * - `timeout`: the task ran longer than its timeout; its worker was stopped before this rejected.
 * - `failed`: the task threw, or its worker crashed or exited. `message` says what happened.
 * - `unavailable`: the pool is closed (or closing), or its compiled worker code is missing.
 * A task cancelled through its AbortSignal rejects with the signal's reason instead (as `fetch` does).
 */
export type WorkerTaskErrorCode = 'overloaded' | 'timeout' | 'failed' | 'unavailable';

export interface WorkerTaskErrorDetails {
  pool: string;
  task: string;
  /** for `overloaded`: which limit, and its value */
  limit?: { name: 'maxPendingTasks' | 'maxPendingBytes'; value: number };
}

/** Kept as a subclass: it carries the pool, the task and the limit, and the pool counts outcomes by `reason`. */
export class WorkerTaskError extends ReasonedError<WorkerTaskErrorCode> {
  constructor(
    reason: WorkerTaskErrorCode,
    message: string,
    readonly details: WorkerTaskErrorDetails,
  ) {
    super(reason, WORKER_CODE[reason], message);
    this.name = 'WorkerTaskError';
  }
}

const WORKER_CODE: Record<WorkerTaskErrorCode, ErrorCode> = { overloaded: 'busy', timeout: 'timeout', failed: 'internal', unavailable: 'unavailable' };

export function isWorkerTaskError(err: unknown, reason?: WorkerTaskErrorCode): err is WorkerTaskError {
  return err instanceof WorkerTaskError && (reason === undefined || err.reason === reason);
}
