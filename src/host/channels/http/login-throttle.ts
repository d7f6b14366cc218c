/**
 * Failed `/v1/login` attempts per client address: after `maxFailures` within `windowMs`, every login from that
 * address (a right token too) gets 429 until the oldest failure leaves the window. A token is 16+ random characters,
 * so guessing is hopeless anyway; this keeps a script from trying at full speed, and from filling the log.
 */
export class LoginThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly maxFailures = 5,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Milliseconds until `address` may try again (0: now). */
  waitMs(address: string): number {
    const recent = this.recent(address);
    if (recent.length < this.maxFailures) return 0;
    return Math.max(1, recent[recent.length - this.maxFailures]! + this.windowMs - this.now());
  }

  fail(address: string): void {
    const recent = this.recent(address);
    recent.push(this.now());
    this.failures.set(address, recent.slice(-this.maxFailures));
    if (this.failures.size > 10_000) this.failures.delete(this.failures.keys().next().value!); // bounded memory
  }

  succeed(address: string): void {
    this.failures.delete(address);
  }

  private recent(address: string): number[] {
    const since = this.now() - this.windowMs;
    return (this.failures.get(address) ?? []).filter((at) => at > since);
  }
}
