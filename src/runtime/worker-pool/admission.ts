import os from 'node:os';
import type { CpuAdmissionLike, CpuPermit } from './types.js';
import { settingOrDefault } from '../../shared/settings-load.js';

/**
 * CPU admission shared by pools (at most max(1, availableParallelism() − 1) tasks on the CPU at once): at
 * most `limit` tasks run at once across every pool drawing from it, one CPU stays free for the poll loop, and waiters
 * are served strictly in FIFO order so one busy pool cannot overtake another.
 */
export class CpuAdmission implements CpuAdmissionLike {
  private active = 0;
  private readonly waiters: { grant: (permit: CpuPermit) => void }[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`CPU admission limit must be a positive integer, got ${limit}`);
  }

  /** Permits in use. */
  get inUse(): number {
    return this.active;
  }

  /** Tasks waiting for a permit. */
  get waiting(): number {
    return this.waiters.length;
  }

  acquire(signal?: AbortSignal): Promise<CpuPermit> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.active < this.limit && this.waiters.length === 0) {
      this.active++;
      return Promise.resolve(this.permit());
    }
    return new Promise<CpuPermit>((resolve, reject) => {
      const waiter = {
        grant: (permit: CpuPermit): void => {
          signal?.removeEventListener('abort', onAbort);
          resolve(permit);
        },
      };
      const onAbort = (): void => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  private permit(): CpuPermit {
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        const next = this.waiters.shift();
        // Hand the permit straight to the oldest waiter: `active` stays the same, and nobody can slip in between.
        if (next) next.grant(this.permit());
        else this.active--;
      },
    };
  }
}

/** max(1, availableParallelism() − 1), or PINCER_WORKER_PARALLELISM when set to a positive integer. */
export function defaultParallelism(env: NodeJS.ProcessEnv = process.env): number {
  return settingOrDefault(env, 'PINCER_WORKER_PARALLELISM') ?? Math.max(1, os.availableParallelism() - 1);
}

let shared: CpuAdmission | undefined;

/** The process-wide admission every pool uses unless given its own. */
export function sharedCpuAdmission(): CpuAdmission {
  shared ??= new CpuAdmission(defaultParallelism());
  return shared;
}
