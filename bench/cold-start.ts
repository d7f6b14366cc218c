import { MODES, RunnerSession, type ByMode } from './runner-session.js';

/**
 * Cold start: spawn → the runner logs `[runner] ready`, and spawn → the reply to a message that was already pending
 * when it started (what a user waits for when the host starts a runner for their message). The two modes take turns,
 * so both see the same machine.
 */
export interface ColdStartSamples {
  toReady: number[];
  toFirstReply: number[];
}

export async function measureColdStart(samples: number): Promise<ByMode<ColdStartSamples>> {
  const result: ByMode<ColdStartSamples> = { watch: { toReady: [], toFirstReply: [] }, poll: { toReady: [], toFirstReply: [] } };
  for (let i = 0; i < samples; i++) {
    // Which mode goes first alternates too: the first start after a stop is the slower one.
    for (const mode of i % 2 === 0 ? MODES : [...MODES].reverse()) {
      const session = await RunnerSession.start({ mode, pendingText: 'cold-start-end' });
      try {
        result[mode].toReady.push(performance.now() - session.spawnedAt);
        const [pending] = session.db.prepare('SELECT id FROM messages_in').all() as { id: string }[];
        await session.until('first reply', () => session.hasReplyTo(pending!.id));
        result[mode].toFirstReply.push(performance.now() - session.spawnedAt);
      } finally {
        await session.close();
      }
    }
  }
  return result;
}
