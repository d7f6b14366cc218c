import { spawn } from 'node:child_process';
import { SESSION_NODE_FLAGS } from '../src/shared/cli-entry.js';
import { MODES, RunnerSession, type ByMode } from './runner-session.js';
import { measureSpare } from './spare.js';

/**
 * Cold start: spawn → the runner logs `[runner] ready`, and spawn → the reply to a message that was already pending
 * when it started (what a user waits for when the host starts a runner for their message). The two modes take turns,
 * so both see the same machine, and so does Node's own floor: a bare `node -e ''` from spawn to exit, with the
 * runner's V8 flags and environment, between them.
 */
export interface ColdStartSamples {
  toReady: number[];
  toFirstReply: number[];
}

export interface ColdStartResult extends ByMode<ColdStartSamples> {
  /** spawn → exit of a bare `node -e ''` with the runner's flags and environment (ms), taking turns with the runners. */
  bare: number[];
  /** the same with the bench's own environment, when it sets NODE_EXTRA_CA_CERTS (which Node 20 reads at start). */
  bareInherited?: number[];
  /** a message for a session with no runner, answered by a warm spare (ms, message committed → reply row). */
  spare: number[];
}

/** What the runners of the bench are started with, as far as Node's own start goes: no inherited environment. */
const BARE_ENV = { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC' };

/**
 * Spawn → exit of `node -e ''`: what any Node program pays on this machine at this moment. With the environment the
 * measured process gets, not the bench's: NODE_EXTRA_CA_CERTS, where set, makes Node 20 read and parse that file
 * before it runs anything (≈ 40 ms for the system bundle here), a cost the bench's runners and hosts do not pay.
 */
export async function bareNodeMs(args: string[] = [], env: NodeJS.ProcessEnv = BARE_ENV): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [...args, '-e', ''], { stdio: 'ignore', env });
  await new Promise((resolve) => child.once('exit', resolve));
  return performance.now() - started;
}

export async function measureColdStart(samples: number): Promise<ColdStartResult> {
  const result: ColdStartResult = { watch: { toReady: [], toFirstReply: [] }, poll: { toReady: [], toFirstReply: [] }, bare: [], spare: [] };
  for (let i = 0; i < samples; i++) {
    result.bare.push(await bareNodeMs(SESSION_NODE_FLAGS));
    result.spare.push(...(await measureSpare(1)));
    if (process.env.NODE_EXTRA_CA_CERTS) (result.bareInherited ??= []).push(await bareNodeMs(SESSION_NODE_FLAGS, process.env));
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
