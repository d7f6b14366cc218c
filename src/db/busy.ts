import { Backoff } from '../shared/backoff.js';
import { errorMessage } from '../shared/log.js';

/**
 * Surviving another process's lock. Each connection waits `BUSY_TIMEOUT_MS` for a writer before SQLite gives up with
 * SQLITE_BUSY; a process that holds its transaction longer than that (a host migration, a backup, a human with the
 * sqlite3 shell) must not end a runner that is only trying to record its state or an answer. `retryWhileBusy` runs a
 * write again with back-off until it gets through; between tries the event loop runs (timers, signals, the agent).
 * A failed try changed nothing: a statement or `.immediate()` transaction that hit the lock was rolled back whole.
 */

/** SQLITE_BUSY or SQLITE_LOCKED, with any extended code (`SQLITE_BUSY_SNAPSHOT`, …). */
export function isBusyError(err: unknown): boolean {
  const code = err instanceof Error ? (err as Error & { code?: unknown }).code : undefined;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

export interface BusyRetryOptions {
  /** what is being written, for the log line: `runner state`, `answer`. */
  what: string;
  /** one line per failed try: `answer: database is locked (2 in a row), trying again in 200 ms`. */
  warn: (line: string) => void;
  /** checked after each failed try: true rethrows the error instead (e.g. the process is stopping). */
  giveUp?: () => boolean;
  /** back-off between tries: from `baseMs`, doubling up to `maxMs` (default 100 ms → 2 s). */
  baseMs?: number;
  maxMs?: number;
}

/** Run `fn` until it does not fail with SQLITE_BUSY/SQLITE_LOCKED; any other error is thrown at once. */
export async function retryWhileBusy<T>(fn: () => T, options: BusyRetryOptions): Promise<T> {
  const backoff = new Backoff(options.baseMs ?? 100, options.maxMs ?? 2000);
  for (;;) {
    try {
      return fn();
    } catch (err) {
      if (!isBusyError(err) || options.giveUp?.()) throw err;
      const { delayMs, failures } = backoff.fail(errorMessage(err));
      options.warn(`${options.what}: ${errorMessage(err)} (${failures} in a row), trying again in ${delayMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
