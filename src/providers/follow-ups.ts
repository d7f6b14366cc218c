/**
 * The input side of a provider query for SDKs without streaming input (Codex, OpenCode): follow-ups pushed while a
 * turn runs are kept here, the provider interrupts the turn (`onPush`) and sends them as the next prompt.
 */
export class FollowUps {
  private pending: string[] = [];
  private ended = false;
  private waiter: (() => void) | null = null;

  constructor(private readonly onPush: () => void = () => {}) {}

  push(message: string): void {
    if (this.ended) return;
    this.pending.push(message);
    this.wake();
    this.onPush();
  }

  /** No more input (`end()` or `abort()`). */
  end(): void {
    this.ended = true;
    this.wake();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  get hasPending(): boolean {
    return this.pending.length > 0;
  }

  /** Everything pushed so far as one prompt, or null. */
  take(): string | null {
    if (this.pending.length === 0) return null;
    return this.pending.splice(0).join('\n\n');
  }

  /** The next prompt once one is pushed, or null once input has ended. */
  async next(): Promise<string | null> {
    while (!this.hasPending && !this.ended) {
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
    return this.take();
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }
}
