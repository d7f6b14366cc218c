import type { TransferListItem } from 'node:worker_threads';

/**
 * The worker-task pool: CPU work such as attachment encoding and the formatting of very
 * large batches runs on worker threads, behind bounded admission, so the runner's poll loop stays responsive.
 */

/** What one task kind takes and gives. A pool is typed by a map of task name → TaskSpec. */
export interface TaskSpec<Input = unknown, Output = unknown> {
  input: Input;
  output: Output;
}

export type TaskMap = Record<string, TaskSpec>;

export interface WorkerPoolOptions {
  /** Name in diagnostics and errors, e.g. `attachments`. */
  name: string;
  /**
   * The module whose named exports are the task handlers, `(input) => output | Promise<output>`. A `.ts` URL (tests
   * run from source) is mapped to its compiled copy under `dist/`, because worker threads run JavaScript only.
   */
  tasks: URL;
  /** Queued + preparing + running tasks this pool admits before `overloaded`. Default 128. */
  maxPendingTasks?: number;
  /** Producer-reported input bytes of queued + preparing + running tasks before `overloaded`. Default 256 MiB. */
  maxPendingBytes?: number;
  /** An idle worker exits after this long. Default 10 s. Idle workers never keep the process alive. */
  idleTimeoutMs?: number;
  /** Default per-task timeout (run time on the worker); none when unset. */
  taskTimeoutMs?: number;
  /** The CPU admission this pool draws from. Default: the process-wide shared one. Tests pin their own. */
  admission?: CpuAdmissionLike;
}

export interface RunOptions<Input> {
  /**
   * The size of the input as the producer knows it (a file's size, a string's length): counted against
   * `maxPendingBytes` without an extra serialisation pass. It bounds reserved input, not the workers' heap.
   */
  inputBytes: number;
  /** The input, when it is already built. */
  input?: Input;
  /**
   * Builds the input once the task holds a CPU permit, so rejected or queued work never builds it. Runs on this thread.
   * May return objects to transfer (ArrayBuffers) instead of copying.
   */
  prepare?: () => Promise<PreparedInput<Input>> | PreparedInput<Input>;
  /** Cancels the task. A running worker is stopped; the promise rejects with `signal.reason` once it has stopped. */
  signal?: AbortSignal;
  /** Overrides the pool's `taskTimeoutMs`. */
  timeoutMs?: number;
}

export interface PreparedInput<Input> {
  input: Input;
  transfer?: TransferListItem[];
}

/** The CPU admission a pool needs: FIFO permits shared by several pools. */
export interface CpuAdmissionLike {
  readonly limit: number;
  /** Resolves with a permit in FIFO order; rejects with `signal.reason` if aborted while waiting. */
  acquire(signal?: AbortSignal): Promise<CpuPermit>;
}

export interface CpuPermit {
  /** Give the permit back (to the next waiter). Idempotent. */
  release(): void;
}

export type TaskOutcome = 'ok' | 'failed' | 'timeout' | 'aborted' | 'overloaded' | 'unavailable';

/**
 * One event on the `pincer.worker.task` diagnostics channel per settled task. Timings and counts only — never the
 * task's input or output. `runMs` includes worker start-up (when a new worker was needed) and message transfer.
 */
export interface WorkerTaskEvent {
  pool: string;
  task: string;
  outcome: TaskOutcome;
  /** waiting for a CPU permit */
  queueMs: number;
  /** building the input (`prepare`) */
  prepareMs: number;
  /** from posting to the worker until the result (or until the worker stopped) */
  runMs: number;
  /** whether this task had to start a new worker */
  coldStart: boolean;
  inputBytes: number;
  /** the pool's counts after this task released its reservation */
  pendingTasks: number;
  pendingBytes: number;
  workers: number;
}

/** Messages between the pool and a worker (worker-entry.ts). */
export interface TaskRequestMessage {
  id: number;
  task: string;
  input: unknown;
}

export type TaskReplyMessage = { id: number; ok: true; value: unknown } | { id: number; ok: false; message: string };
