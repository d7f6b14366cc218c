import { rssMiB } from './proc.js';
import { RunnerSession, sleep } from './runner-session.js';

/**
 * Sustained throughput, end to end: a producer keeps up to `window` messages outstanding, each inserted in its own
 * transaction as a host would, until `count` are completed. Messages per second = count ÷ (first insert → last
 * completed). The runner's RSS before and after (once idle again) shows whether memory grows with work done.
 */
export interface ThroughputResult {
  count: number;
  window: number;
  seconds: number;
  perSecond: number;
  /** prompts used: queries + pushes. */
  batches: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
}

export async function measureThroughput(session: RunnerSession, count: number, window: number, settleMs = 1000): Promise<ThroughputResult> {
  const rssBeforeMiB = rssMiB(session.pid) ?? Number.NaN;
  const completedBefore = session.countByStatus('completed');
  session.readRecords();
  const recordsBefore = session.records.length;
  let sent = 0;
  let completed = 0;
  let started = 0;
  while (completed < count) {
    while (sent < count && sent - completed < window) {
      const { at } = session.insertChat(`sustained-${sent}-end`);
      if (sent === 0) started = at;
      sent += 1;
    }
    const done = completed;
    completed = await session.until(
      'messages completed',
      () => {
        const n = session.countByStatus('completed') - completedBefore;
        return n > done ? n : undefined;
      },
      120_000,
    );
  }
  const seconds = (performance.now() - started) / 1000;
  session.readRecords();
  await sleep(settleMs);
  return {
    count,
    window,
    seconds,
    perSecond: count / seconds,
    batches: session.records.length - recordsBefore,
    rssBeforeMiB,
    rssAfterMiB: rssMiB(session.pid) ?? Number.NaN,
  };
}
