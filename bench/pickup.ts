import type { WakeMode } from '../src/db/wake.js';
import { idleGap, sampleAcross } from './runner-session.js';

/**
 * Pickup latency of an idle runner: a message is inserted while the runner waits for work; we time insert → the
 * query starts (the mock records `query()`) and insert → the reply row is in `messages_out`.
 *
 * Between samples the runner finishes the previous message and goes idle. The gap before the next insert is random
 * over one idle poll interval, so the fixed-interval baseline is sampled at every phase of its timer; wake-on-change
 * has no phase, a short gap is enough. Baseline samples are taken on several runners at once: each waits most of a
 * second per sample, and running them side by side keeps the full bench under five minutes.
 */
export interface PickupSamples {
  toQuery: number[];
  toReply: number[];
  runners: number;
}

export async function measurePickup(mode: WakeMode, samples: number, runners: number, pollIdleMs = 1000): Promise<PickupSamples> {
  const result: PickupSamples = { toQuery: [], toReply: [], runners };
  await sampleAcross({ mode }, runners, samples, async (session, r, i) => {
    await idleGap(mode, pollIdleMs);
    const token = `pickup-${r}-${i}-end`;
    const { id, at } = session.insertChat(token);
    const query = await session.until('query start', () => session.recordFor(token));
    await session.until('reply', () => session.hasReplyTo(id));
    const repliedAt = performance.now();
    result.toQuery.push(query.at - at);
    result.toReply.push(repliedAt - at);
    await session.until('completed', () => session.isCompleted(id));
  });
  return result;
}
