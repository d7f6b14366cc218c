import { setMaxListeners } from 'node:events';
import { createRequire } from 'node:module';
import type { Worker } from 'node:worker_threads';
import { sharedCpuAdmission } from './admission.js';
import { publishTaskEvent } from './diagnostics.js';
import { WorkerTaskError, isWorkerTaskError } from './errors.js';
import { moduleExists, runnableModuleUrl } from './module-url.js';
import type { CpuAdmissionLike, CpuPermit, PreparedInput, RunOptions, TaskMap, TaskOutcome, TaskReplyMessage, WorkerPoolOptions } from './types.js';

/**
 * A bounded pool of worker threads. Admission counts queued, preparing and running tasks against
 * `maxPendingTasks` / `maxPendingBytes` and refuses excess work at once with `overloaded`, before its input is built.
 * A CPU permit from the shared FIFO admission is held from preparation until the worker is free again — and, for a
 * cancelled or timed-out task, until its worker has really stopped, so a stuck worker can never push the process
 * over its CPU budget. Idle workers are unref'd (they never keep the process alive) and exit after `idleTimeoutMs`.
 */
export const DEFAULT_MAX_PENDING_TASKS = 128;
export const DEFAULT_MAX_PENDING_BYTES = 256 * 1024 * 1024;
export const DEFAULT_IDLE_TIMEOUT_MS = 10_000;

interface Slot {
  worker: Worker;
  exited: Promise<void>;
  idleTimer?: NodeJS.Timeout;
  lastError?: Error;
  onReply?: (reply: TaskReplyMessage) => void;
  /** set while a task runs: the worker died under it (called once it has exited). */
  onDeath?: (error: Error) => void;
}

interface Timing {
  queueMs: number;
  prepareMs: number;
  runMs: number;
  coldStart: boolean;
}

let liveWorkers = 0;

/** node:worker_threads, loaded with the first worker: a runner that never needs one keeps its idle RSS. */
let workerThreadsModule: typeof import('node:worker_threads') | undefined;
function workerThreads(): typeof import('node:worker_threads') {
  workerThreadsModule ??= createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads');
  return workerThreadsModule;
}

/** Worker threads started by any pool in this process that have not exited yet (tests assert it returns to 0). */
export function liveWorkerCount(): number {
  return liveWorkers;
}

export class WorkerTaskPool<Tasks extends TaskMap> {
  readonly name: string;
  private readonly script = runnableModuleUrl(new URL('./worker-entry.js', import.meta.url));
  private readonly tasksUrl: URL;
  private readonly maxPendingTasks: number;
  private readonly maxPendingBytes: number;
  private readonly idleTimeoutMs: number;
  private readonly taskTimeoutMs: number | undefined;
  private readonly admission: CpuAdmissionLike;
  private readonly slots = new Set<Slot>();
  private readonly idle: Slot[] = [];
  private readonly closing = new AbortController();
  private readonly inFlight = new Set<Promise<unknown>>();
  private pendingTasks = 0;
  private pendingBytes = 0;
  private nextId = 1;
  /** the worker code was found once; it is not looked for again on every task */
  private codeFound = false;

  constructor(options: WorkerPoolOptions) {
    this.name = options.name;
    this.tasksUrl = runnableModuleUrl(options.tasks);
    this.maxPendingTasks = options.maxPendingTasks ?? DEFAULT_MAX_PENDING_TASKS;
    this.maxPendingBytes = options.maxPendingBytes ?? DEFAULT_MAX_PENDING_BYTES;
    this.idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.taskTimeoutMs = options.taskTimeoutMs;
    this.admission = options.admission ?? sharedCpuAdmission();
    // Each pending task listens on the close signal (at most two listeners per task, tasks bounded by maxPendingTasks).
    setMaxListeners(2 * this.maxPendingTasks + 1, this.closing.signal);
  }

  /** Current counts (the same ones the diagnostics events carry). */
  get stats(): { pendingTasks: number; pendingBytes: number; workers: number; idleWorkers: number } {
    return {
      pendingTasks: this.pendingTasks,
      pendingBytes: this.pendingBytes,
      workers: this.slots.size,
      idleWorkers: this.idle.length,
    };
  }

  /** Run `task` (a named export of the pool's task module) on a worker. Rejections: see `WorkerTaskError`. */
  run<K extends keyof Tasks & string>(task: K, options: RunOptions<Tasks[K]['input']>): Promise<Tasks[K]['output']> {
    const refused = this.admit(task, options);
    if (refused) {
      publishTaskEvent(() => ({ ...this.event(task, refused.reason, options.inputBytes), ...zeroTiming() }));
      return Promise.reject(refused);
    }
    const running = this.execute(task, options);
    this.inFlight.add(running);
    void running.then(
      () => this.inFlight.delete(running),
      () => this.inFlight.delete(running),
    );
    return running as Promise<Tasks[K]['output']>;
  }

  /**
   * Refuse new work, cancel queued and running tasks (they reject with `unavailable`), and resolve once every
   * preparation has settled and every worker has exited.
   */
  async close(): Promise<void> {
    if (!this.closing.signal.aborted) {
      this.closing.abort(this.error('unavailable', '*', `worker pool "${this.name}" is closed`));
    }
    await Promise.allSettled([...this.inFlight]);
    await Promise.all([...this.slots].map((slot) => this.terminate(slot)));
  }

  /** The reason a task is refused at once, or undefined: then its reservation has been made. */
  private admit(task: string, options: RunOptions<unknown>): WorkerTaskError | undefined {
    if (this.closing.signal.aborted) return this.error('unavailable', task, `worker pool "${this.name}" is closed`);
    if (!this.codeFound) {
      for (const url of [this.script, this.tasksUrl]) {
        if (!moduleExists(url)) {
          return this.error('unavailable', task, `worker code not found: ${url.pathname} (run npm run build)`);
        }
      }
      this.codeFound = true;
    }
    if (!Number.isFinite(options.inputBytes) || options.inputBytes < 0) {
      return this.error('failed', task, `task "${task}": inputBytes must be a number ≥ 0, got ${options.inputBytes}`);
    }
    if (this.pendingTasks + 1 > this.maxPendingTasks) {
      return this.error(
        'overloaded',
        task,
        `worker pool "${this.name}" is overloaded: ${this.pendingTasks} tasks pending (maxPendingTasks ${this.maxPendingTasks})`,
        {
          name: 'maxPendingTasks',
          value: this.maxPendingTasks,
        },
      );
    }
    if (this.pendingBytes + options.inputBytes > this.maxPendingBytes) {
      return this.error(
        'overloaded',
        task,
        `worker pool "${this.name}" is overloaded: ${this.pendingBytes} + ${options.inputBytes} input bytes pending (maxPendingBytes ${this.maxPendingBytes})`,
        {
          name: 'maxPendingBytes',
          value: this.maxPendingBytes,
        },
      );
    }
    this.pendingTasks++;
    this.pendingBytes += options.inputBytes;
    return undefined;
  }

  private async execute(task: string, options: RunOptions<unknown>): Promise<unknown> {
    const timing: Timing = zeroTiming();
    const signal = options.signal ? AbortSignal.any([options.signal, this.closing.signal]) : this.closing.signal;
    let permit: CpuPermit | undefined;
    let outcome: TaskOutcome = 'failed';
    try {
      let mark = performance.now();
      permit = await this.admission.acquire(signal);
      timing.queueMs = performance.now() - mark;
      mark = performance.now();
      // Preparation is awaited even when the task is cancelled meanwhile: its input reservation lasts until it settles.
      const prepared = await this.prepare(task, options);
      timing.prepareMs = performance.now() - mark;
      if (signal.aborted) throw signal.reason;
      const value = await this.runOnWorker(task, prepared, signal, options.timeoutMs ?? this.taskTimeoutMs, timing);
      outcome = 'ok';
      return value;
    } catch (err) {
      outcome = isWorkerTaskError(err) ? err.reason : options.signal?.aborted ? 'aborted' : 'failed';
      throw err;
    } finally {
      permit?.release();
      this.pendingTasks--;
      this.pendingBytes -= options.inputBytes;
      publishTaskEvent(() => ({ ...this.event(task, outcome, options.inputBytes), ...timing }));
    }
  }

  private async prepare(task: string, options: RunOptions<unknown>): Promise<PreparedInput<unknown>> {
    if (!options.prepare) return { input: options.input };
    try {
      return await options.prepare();
    } catch (err) {
      throw this.error('failed', task, `preparing the input of "${task}" failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private runOnWorker(task: string, prepared: PreparedInput<unknown>, signal: AbortSignal, timeoutMs: number | undefined, timing: Timing): Promise<unknown> {
    const started = performance.now();
    let slot = this.idle.pop();
    if (slot) {
      clearTimeout(slot.idleTimer);
      slot.worker.ref();
    } else {
      slot = this.spawn();
      timing.coldStart = true;
    }
    const current = slot;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        current.onReply = undefined;
        current.onDeath = undefined;
        timing.runMs = performance.now() - started;
        return true;
      };
      // Stop the worker and reject only once it has exited; the caller keeps the permit until then.
      const stop = (error: unknown): void => {
        if (!finish()) return;
        void this.terminate(current).then(() => {
          timing.runMs = performance.now() - started;
          reject(error);
        });
      };
      const onAbort = (): void => stop(signal.reason);
      const timer =
        timeoutMs === undefined ? undefined : setTimeout(() => stop(this.error('timeout', task, `task "${task}" timed out after ${timeoutMs} ms`)), timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });
      current.onReply = (reply) => {
        if (reply.id !== id || !finish()) return;
        this.makeIdle(current);
        if (reply.ok) resolve(reply.value);
        else reject(this.error('failed', task, `task "${task}" failed: ${reply.message}`));
      };
      current.onDeath = (error) => {
        if (finish()) reject(this.error('failed', task, `worker of task "${task}" died: ${error.message}`));
      };
      try {
        current.worker.postMessage({ id, task, input: prepared.input }, prepared.transfer ?? []);
      } catch (err) {
        // The input could not be cloned; the worker itself is fine.
        if (finish()) {
          this.makeIdle(current);
          reject(this.error('failed', task, `cannot send the input of "${task}": ${err instanceof Error ? err.message : String(err)}`));
        }
      }
    });
  }

  private spawn(): Slot {
    const worker = startWorker(this.script, { tasksUrl: this.tasksUrl.href });
    liveWorkers++;
    const slot: Slot = {
      worker,
      exited: new Promise<void>((resolve) => {
        worker.once('exit', (code) => {
          liveWorkers--;
          this.slots.delete(slot);
          const index = this.idle.indexOf(slot);
          if (index >= 0) this.idle.splice(index, 1);
          clearTimeout(slot.idleTimer);
          slot.onDeath?.(slot.lastError ?? new Error(`exited with code ${code}`));
          resolve();
        });
      }),
    };
    // 'error' is always followed by 'exit'; the task is failed from 'exit', once the worker is gone.
    worker.on('error', (err) => (slot.lastError = err));
    worker.on('message', (reply: TaskReplyMessage) => slot.onReply?.(reply));
    this.slots.add(slot);
    return slot;
  }

  private makeIdle(slot: Slot): void {
    if (this.closing.signal.aborted) {
      void this.terminate(slot);
      return;
    }
    slot.worker.unref();
    slot.idleTimer = setTimeout(() => void this.terminate(slot), this.idleTimeoutMs);
    slot.idleTimer.unref();
    this.idle.push(slot);
  }

  private async terminate(slot: Slot): Promise<void> {
    const index = this.idle.indexOf(slot);
    if (index >= 0) this.idle.splice(index, 1);
    clearTimeout(slot.idleTimer);
    await slot.worker.terminate();
    await slot.exited;
  }

  private event(task: string, outcome: TaskOutcome, inputBytes: number) {
    return {
      pool: this.name,
      task,
      outcome,
      inputBytes,
      pendingTasks: this.pendingTasks,
      pendingBytes: this.pendingBytes,
      workers: this.slots.size,
    };
  }

  private error(
    code: WorkerTaskError['reason'],
    task: string,
    message: string,
    limit?: { name: 'maxPendingTasks' | 'maxPendingBytes'; value: number },
  ): WorkerTaskError {
    return new WorkerTaskError(code, message, { pool: this.name, task, ...(limit ? { limit } : {}) });
  }
}

/**
 * The Node flags a worker starts with: the parent's, minus `--input-type` and `-e`/`-p` (which would make Node refuse to
 * load the worker's file). Workers reject V8 and process-wide flags (`--max-semi-space-size=1`, which the host gives
 * every runner, `--max-old-space-size`, `--expose-gc`, …) with ERR_WORKER_INVALID_EXEC_ARGV; those already apply to
 * the whole process, so when Node refuses the parent's flags the worker starts with none. Decided once per process.
 */
let acceptedExecArgv: string[] | undefined;

function startWorker(script: URL, workerData: { tasksUrl: string }): Worker {
  const { Worker } = workerThreads();
  if (acceptedExecArgv) return new Worker(script, { workerData, execArgv: acceptedExecArgv });
  const inherited = inheritableExecArgv(process.execArgv);
  try {
    const worker = new Worker(script, { workerData, execArgv: inherited });
    acceptedExecArgv = inherited;
    return worker;
  } catch (err) {
    if ((err as { code?: unknown }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw err;
    acceptedExecArgv = [];
    return new Worker(script, { workerData, execArgv: acceptedExecArgv });
  }
}

/** `process.execArgv` without the flags that only mean something for the main script's source text. */
export function inheritableExecArgv(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    if (arg.startsWith('--input-type')) continue;
    if (arg === '-e' || arg === '--eval' || arg === '-p' || arg === '--print') {
      i++; // its script
      continue;
    }
    if (arg.startsWith('--eval=') || arg.startsWith('--print=')) continue;
    kept.push(arg);
  }
  return kept;
}

function zeroTiming(): Timing {
  return { queueMs: 0, prepareMs: 0, runMs: 0, coldStart: false };
}
