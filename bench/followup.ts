import type { WakeMode } from '../src/db/wake.js';
import { sampleAcross, sleep, uniform } from './runner-session.js';

/**
 * Follow-up latency during an active query: message A starts a query that the mock answers after `delayMs`; at a
 * random moment while it runs, message B is inserted, and we time insert → B is pushed into the query (the mock
 * records `push()`).
 *
 * B arrives between 20 ms and 980 ms after the query started: nearly two whole active poll intervals of the
 * baseline (500 ms), so every phase of its timer is sampled, and before its second look (at 1,000 ms and later). The
 * mock answers A after `delayMs` (1,500 ms), so B's push beats A's answer (after which the runner starts a new query
 * instead) by some 500 ms even on a loaded machine. A B that
 * still missed the query is counted, not timed. Samples are taken on several runners at once; each spends most of its
 * time waiting for the mock.
 */
export interface FollowUpSamples {
  toPush: number[];
  /** follow-ups that were not pushed into the running query (they started the next query instead). */
  missed: number;
  runners: number;
  delayMs: number;
}

export async function measureFollowUp(mode: WakeMode, samples: number, runners: number, delayMs = 1500): Promise<FollowUpSamples> {
  const result: FollowUpSamples = { toPush: [], missed: 0, runners, delayMs };
  await sampleAcross({ mode, delayMs }, runners, samples, async (session, r, i) => {
    const first = session.insertChat(`followup-${r}-${i}-first`);
    const started = await session.until('query start', () => session.recordFor(`followup-${r}-${i}-first`));
    await sleep(started.at + uniform(20, 980) - performance.now());
    const token = `followup-${r}-${i}-next`;
    const next = session.insertChat(token);
    const line = await session.until('follow-up seen', () => session.recordFor(token));
    if (line.type === 'push') result.toPush.push(line.at - next.at);
    else result.missed += 1;
    await session.until('both completed', () => session.isCompleted(first.id) && session.isCompleted(next.id), 30_000);
    await sleep(uniform(20, 60));
  });
  return result;
}
