import type { WakeMode } from '../src/db/wake.js';
import { summarize } from './stats.js';
import { idleGap, RunnerSession } from './runner-session.js';

/**
 * A burst: `count` messages inserted in one transaction (a host flushing its queue) into an idle runner, at a random
 * phase of the baseline's idle timer. We time insert → all completed, and count the prompts used (the mock's queries
 * and pushes) and the messages left behind (not completed, or never shown to the agent). Repeated `runs` times on
 * fresh runners, because one burst is one sample of a noisy machine: seconds is the median, prompts the most used,
 * left behind the total.
 */
export interface BurstResult {
  count: number;
  runs: number;
  /** median over the runs. */
  seconds: number;
  secondsPerRun: number[];
  /** prompts the messages were spread over (queries + pushes), the most of any run. */
  batches: number;
  /** messages not completed or in no prompt, over all runs. */
  leftBehind: number;
}

export async function measureBurst(mode: WakeMode, count: number, runs = 1): Promise<BurstResult> {
  const result: BurstResult = { count, runs, seconds: Number.NaN, secondsPerRun: [], batches: 0, leftBehind: 0 };
  for (let run = 0; run < runs; run++) {
    const session = await RunnerSession.start({ mode });
    try {
      await idleGap(mode);
      const tokens = Array.from({ length: count }, (_, i) => `burst-${i}-end`);
      const { ids, at } = session.insertBurst(tokens);
      await session.until('burst completed', () => session.countByStatus('completed') === count, 120_000, 2);
      result.secondsPerRun.push((performance.now() - at) / 1000);
      session.readRecords();
      const shown = tokens.filter((token) => session.records.some((line) => line.prompt.includes(token))).length;
      const completed = ids.filter((id) => session.isCompleted(id)).length;
      result.batches = Math.max(result.batches, session.records.length);
      result.leftBehind += count - Math.min(shown, completed);
    } finally {
      await session.close();
    }
  }
  result.seconds = summarize(result.secondsPerRun).p50;
  return result;
}
