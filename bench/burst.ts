import type { WakeMode } from '../src/runner/wake.js';
import { idleGap, RunnerSession } from './runner-session.js';

/**
 * A burst: `count` messages inserted in one transaction (a host flushing its queue) into an idle runner (at a random phase of the baseline's idle timer); we time
 * insert → all completed, and count the prompts used (the mock's queries and pushes) and the messages left behind
 * (not completed, or never shown to the agent).
 */
export interface BurstResult {
  count: number;
  seconds: number;
  /** prompts the messages were spread over: queries + pushes. */
  batches: number;
  /** messages not completed or in no prompt. */
  leftBehind: number;
}

export async function measureBurst(mode: WakeMode, count: number): Promise<BurstResult> {
  const session = await RunnerSession.start({ mode });
  try {
    await idleGap(mode);
    const tokens = Array.from({ length: count }, (_, i) => `burst-${i}-end`);
    const { ids, at } = session.insertBurst(tokens);
    await session.until('burst completed', () => session.countByStatus('completed') === count, 120_000, 2);
    const seconds = (performance.now() - at) / 1000;
    session.readRecords();
    const shown = tokens.filter((token) => session.records.some((line) => line.prompt.includes(token))).length;
    const completed = ids.filter((id) => session.isCompleted(id)).length;
    return { count, seconds, batches: session.records.length, leftBehind: count - Math.min(shown, completed) };
  } finally {
    await session.close();
  }
}
