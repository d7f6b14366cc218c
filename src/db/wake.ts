import fs from 'node:fs';
import path from 'node:path';

/**
 * Wake-on-change for anything that waits on the session DB (the poll loop, `pincer outbox --follow`, the MCP
 * server's question wait). In `watch` mode the session folder is watched and a write to `session.db*` by any process
 * wakes the waiter at once; the timeout given to `wait()` is only the fallback. In `poll` mode nothing is watched:
 * fixed-interval polling, kept as the baseline for `npm run bench`.
 */
export type WakeMode = 'watch' | 'poll';

/**
 * A writer appends its WAL frames (which fire the watch) a moment before it publishes the commit in the shared-memory
 * index (which fires nothing). A reader woken in between sees nothing new, so the last change of a burst is
 * re-announced a few times after it: soon, for the usual gap of microseconds, and later, for a writer the kernel
 * preempted in between on a loaded machine (once the only re-announcement came 5 ms later; a writer descheduled for
 * longer left its reader asleep until the idle check, a minute on).
 */
export const SETTLE_RECHECKS_MS = [5, 50, 500] as const;

export class Waker {
  private readonly waiters = new Set<() => void>();
  private dirty = false;
  private watcher: fs.FSWatcher | null = null;
  private recheck: NodeJS.Timeout | null = null;
  /** how many of SETTLE_RECHECKS_MS were announced since the last change */
  private rechecked = 0;

  /**
   * Why this waker polls although `watch` was asked for: the kernel gave it no inotify instance (EMFILE, ENOSPC: Linux
   * allows 128 per user by default, `fs.inotify.max_user_instances`). Then every `wait()` is a timed poll — slower to
   * notice, never a crash. Undefined while watching.
   */
  readonly pollingBecause: string | undefined;

  constructor(dir: string, mode: WakeMode, dbFile = 'session.db') {
    if (mode !== 'watch') return;
    try {
      this.watcher = this.watch(dir, dbFile);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EMFILE' && code !== 'ENFILE' && code !== 'ENOSPC') throw err;
      this.pollingBecause = `no inotify instance for ${dir} (${code}; see fs.inotify.max_user_instances)`;
    }
  }

  /** Whether a change wakes a waiter at once (then `wait()`'s timeout only covers a missed event). */
  get watching(): boolean {
    return this.watcher !== null;
  }

  private watch(dir: string, dbFile: string): fs.FSWatcher {
    const watcher = fs.watch(dir, { persistent: false }, (_event, filename) => {
      if (filename !== null && !filename.startsWith(path.basename(dbFile))) return;
      this.changed();
    });
    watcher.on('error', () => this.close());
    return watcher;
  }

  /** A write to the watched database: wake the waiters now, and again after each of SETTLE_RECHECKS_MS. */
  changed(): void {
    this.notify();
    this.rechecked = 0;
    this.scheduleRecheck();
  }

  /** The next re-announcement of the last change, timed from the one before (each change restarts the series). */
  private scheduleRecheck(): void {
    if (this.recheck) clearTimeout(this.recheck);
    const at = SETTLE_RECHECKS_MS[this.rechecked];
    const before = this.rechecked === 0 ? 0 : SETTLE_RECHECKS_MS[this.rechecked - 1]!;
    if (at === undefined) {
      this.recheck = null;
      return;
    }
    this.recheck = setTimeout(() => {
      this.recheck = null;
      this.rechecked += 1;
      this.notify();
      this.scheduleRecheck();
    }, at - before);
    this.recheck.unref();
  }

  /** Resolve on the next change (or at once if one came since the last wait), or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void> {
    if (this.dirty) {
      this.dirty = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      this.waiters.add(done);
    });
  }

  /** Wake every waiter now; with none waiting, the next `wait()` returns at once. */
  notify(): void {
    if (this.waiters.size === 0) {
      this.dirty = true;
      return;
    }
    for (const done of [...this.waiters]) done();
  }

  close(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.recheck) clearTimeout(this.recheck);
    this.recheck = null;
    this.notify();
  }
}
