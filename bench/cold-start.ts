import type { WakeMode } from '../src/runner/wake.js';
import { RunnerSession } from './runner-session.js';

/**
 * Cold start: spawn → the runner logs `[runner] ready`, and spawn → the reply to a message that was already pending
 * when it started (what a user waits for when the host starts a runner for their message).
 */
export interface ColdStartSamples {
  toReady: number[];
  toFirstReply: number[];
}

export async function measureColdStart(mode: WakeMode, samples: number): Promise<ColdStartSamples> {
  const result: ColdStartSamples = { toReady: [], toFirstReply: [] };
  for (let i = 0; i < samples; i++) {
    const session = await RunnerSession.start({ mode, pendingText: 'cold-start-end' });
    try {
      result.toReady.push(performance.now() - session.spawnedAt);
      const [pending] = session.db.prepare('SELECT id FROM messages_in').all() as { id: string }[];
      await session.until('first reply', () => session.hasReplyTo(pending!.id));
      result.toFirstReply.push(performance.now() - session.spawnedAt);
    } finally {
      await session.close();
    }
  }
  return result;
}
