/**
 * A version number and the waiters for its next change: what a `sync` of the session port waits on (a long-poll over
 * HTTP, or the host's own loop for a local session) instead of polling.
 */
export class ChangeSignal {
  private current = 0;
  private readonly waiters = new Set<() => void>();

  get version(): number {
    return this.current;
  }

  /** A change: the version goes up and every waiter wakes. Returns the new version. */
  bump(): number {
    this.current += 1;
    for (const wake of [...this.waiters]) wake();
    return this.current;
  }

  /** Resolve once the version is above `after` (at once if it already is), or after `timeoutMs`. */
  wait(after: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.current > after || timeoutMs <= 0 || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Wake every waiter now (the session is closing). */
  wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}
