/**
 * Exponential back-off for a loop that keeps failing (a full disk, a locked or vanished database): each failure in a
 * row doubles the wait, from `baseMs` up to `maxMs`, and the caller logs one line per failure — so at most one line
 * per back-off step, never thousands a second. A success resets it.
 */
export class Backoff {
  private failures = 0;
  private lastError: string | undefined;

  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
  ) {}

  /** Count a failure: how long to wait before the next try, and whether the error differs from the previous one. */
  fail(error: string): { delayMs: number; failures: number; newError: boolean } {
    this.failures += 1;
    const newError = error !== this.lastError;
    this.lastError = error;
    const delayMs = Math.min(this.maxMs, this.baseMs * 2 ** Math.min(this.failures - 1, 30));
    return { delayMs, failures: this.failures, newError };
  }

  /** A success: returns how many failures in a row it ends (0 when there were none). */
  succeed(): number {
    const ended = this.failures;
    this.failures = 0;
    this.lastError = undefined;
    return ended;
  }
}
