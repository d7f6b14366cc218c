import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { insertInbound } from '../src/db/messages.js';
import { openSessionDb } from '../src/db/connection.js';
import { loadHostConfig } from '../src/host/config.js';
import { RunnerSupervisor } from '../src/host/session/runners.js';
import { SessionEngine } from '../src/host/session/engine.js';
import { createLogger } from '../src/shared/log.js';
import { cleanupSessions, createTestSession } from './support/session.js';

/**
 * An idle session's engine (no runner, nothing due) wakes no `sync`: its fallback turns find nothing committed and
 * announce nothing, so the host's side of an idle session does no work. A write by another connection (a runner, a
 * user's CLI) is announced at once.
 */
const silent = createLogger('host', () => undefined);
const homes: string[] = [];
const engines: SessionEngine[] = [];

afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.close();
  cleanupSessions();
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function idleEngine(env: Record<string, string>): { engine: SessionEngine; dbFile: string } {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-home-'));
  homes.push(home);
  const config = loadHostConfig({ TZ: 'UTC', PINCER_HOME: home, AGENT_PROVIDER: 'mock', ...env });
  const test = createTestSession();
  test.db.close();
  const engine = new SessionEngine({
    session: { id: 's-idle', folder: test.paths.root },
    config: { ...config, runners: { ...config.runners, kind: 'process' } },
    supervisor: new RunnerSupervisor({ ...config.runners, kind: 'process' }, silent, () => undefined),
    launch: { groupDir: path.join(home, 'agent'), globalDir: path.join(home, 'global'), logFile: path.join(home, 'runner.log') },
    log: silent,
  });
  engines.push(engine);
  return { engine, dbFile: test.paths.db };
}

/** Resolve once the engine's loop has turned at least `turns` more times (each turn ends with a look at the DB). */
async function turnsPass(engine: SessionEngine, turns: number): Promise<void> {
  for (let i = 0; i < turns; i++) {
    engine.slot.waker.notify(); // a wake-up with nothing written: what a fallback turn is
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('an idle session engine', () => {
  it('announces nothing when its turns find nothing changed, and a write by another connection at once', async () => {
    const { engine, dbFile } = idleEngine({ PINCER_SWEEP_INTERVAL_MS: '10' });
    engine.run();
    await engine.changes.wait(0, 5_000); // its first turn announces the state it found
    await turnsPass(engine, 3);
    const settled = engine.changes.version;
    await turnsPass(engine, 10);
    expect(engine.changes.version).toBe(settled);

    const other = openSessionDb(dbFile); // as a runner or `pincer` on the same folder would
    // a task for tomorrow: nothing due, so no runner starts
    insertInbound(other, { kind: 'task', content: { prompt: 'later' }, processAfter: new Date(Date.now() + 86_400_000).toISOString() });
    other.close();
    await engine.changes.wait(settled, 10_000);
    expect(engine.changes.version).toBeGreaterThan(settled);
  });
});
