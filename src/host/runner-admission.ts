import os from 'node:os';

/**
 * Admission for runners: how many may be alive at once on this host, and who starts next. A session whose runner may
 * not start yet waits in arrival order (its first refused start); nothing is refused or lost, its messages stay
 * pending. The room is counted in units: with `PINCER_MAX_RUNNERS` set, a runner is one unit and the room is that
 * number; unset, the room is half the machine's memory in MiB and a runner costs its provider's footprint, so a host
 * of Claude Code sessions admits fewer than one of built-in agents. docs/performance.md "Runners alive at once".
 */

/** Resident memory of one runner with its provider, in MiB (measured idle-to-busy; Claude Code's SDK child included). */
export const PROVIDER_FOOTPRINT_MIB: Readonly<Record<string, number>> = { claude: 350, codex: 250, opencode: 250, pincer: 80, mock: 64 };
/** The share of the machine's memory runners may take by default. */
export const MEMORY_SHARE = 0.5;

export interface RunnerLimit {
  /** units runners may take together. */
  capacity: number;
  /** units one runner of `provider` takes. */
  costOf(provider: string): number;
  /** one line for logs and the doctor. */
  describe: string;
}

/** The limit: `maxRunners` runners, or (unset) half of `totalMemoryBytes` shared by the providers' footprints. */
export function runnerLimit(maxRunners: number | undefined, totalMemoryBytes = os.totalmem()): RunnerLimit {
  if (maxRunners !== undefined) return { capacity: maxRunners, costOf: () => 1, describe: `at most ${maxRunners} (PINCER_MAX_RUNNERS)` };
  const totalMib = Math.floor(totalMemoryBytes / 2 ** 20);
  const capacity = Math.max(1, Math.floor(totalMib * MEMORY_SHARE));
  const costOf = (provider: string): number => PROVIDER_FOOTPRINT_MIB[provider] ?? PROVIDER_FOOTPRINT_MIB.claude!; // `auto` and others: the largest
  const claude = Math.floor(capacity / costOf('claude'));
  const mock = Math.floor(capacity / costOf('mock'));
  return {
    capacity,
    costOf,
    describe: `${capacity} MiB (half of ${totalMib} MiB) shared at each provider's footprint: about ${claude} Claude Code or ${mock} mock runners (PINCER_MAX_RUNNERS unset)`,
  };
}

interface Waiting {
  since: number;
  cost: number;
  wake: () => void;
}

export class RunnerAdmission {
  private readonly running = new Map<string, number>();
  /** insertion order is arrival order. */
  private readonly waiting = new Map<string, Waiting>();
  private used = 0;

  constructor(readonly limit: RunnerLimit) {}

  /**
   * Whether `sessionId`'s runner may start now. Yes: its cost is counted until `release`. No: it waits (from its first
   * refusal on) and `wake` is called when it is first in line and room may have come. The first in line is never
   * passed over by a later, smaller one; one runner is always allowed when none runs (a footprint above the room).
   */
  tryStart(sessionId: string, provider: string, wake: () => void): boolean {
    if (this.running.has(sessionId)) return true;
    const cost = this.limit.costOf(provider);
    const first = this.waiting.keys().next().value;
    const inTurn = first === undefined || first === sessionId;
    if (inTurn && (this.used + cost <= this.limit.capacity || this.used === 0)) {
      this.waiting.delete(sessionId);
      this.running.set(sessionId, cost);
      this.used += cost;
      this.wakeFirst(); // the next in line may fit as well
      return true;
    }
    const queued = this.waiting.get(sessionId);
    if (queued) queued.wake = wake;
    else this.waiting.set(sessionId, { since: Date.now(), cost, wake });
    return false;
  }

  /** The session's runner is gone: its room goes to the first in line. */
  release(sessionId: string): void {
    const cost = this.running.get(sessionId);
    if (cost === undefined) return;
    this.running.delete(sessionId);
    this.used -= cost;
    this.wakeFirst();
  }

  /** The session no longer wants to start (nothing due, draining, over budget, closed): out of the line. */
  withdraw(sessionId: string): void {
    const wasFirst = this.waiting.keys().next().value === sessionId;
    if (!this.waiting.delete(sessionId)) return;
    if (wasFirst) this.wakeFirst();
  }

  /** Since when (epoch ms) the session waits, if it does. */
  waitingSince(sessionId: string): number | undefined {
    return this.waiting.get(sessionId)?.since;
  }

  /** Sessions waiting, first in line first. */
  queue(): string[] {
    return [...this.waiting.keys()];
  }

  /** Units the first in line lacks beyond `freeing` (the cost of runners already stopping); 0 when none waits or it fits. */
  shortfall(freeing: number): number {
    const first = this.waiting.values().next().value;
    if (!first) return 0;
    return Math.max(0, this.used - freeing + first.cost - this.limit.capacity);
  }

  costOf(sessionId: string): number {
    return this.running.get(sessionId) ?? 0;
  }

  get inUse(): number {
    return this.used;
  }

  private wakeFirst(): void {
    const first = this.waiting.values().next().value;
    first?.wake();
  }
}
