import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { isAlive } from './support/processes.js';
import { waitFor } from './support/wait.js';

/**
 * A runner whose supervisor died mid-turn finishes that turn (its lifeline closed: it stops gracefully) and writes its
 * answer. Until it has ended, the message is still its own: the next supervisor's sweep must not put it back to
 * pending, or the next runner answers it a second time. Here the supervisor is a `pincer session-serve` process,
 * SIGKILLed while its plain-process runner is in a slow turn; the host relaunches the session at once.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

async function post(host: HostHandle, conversation: string, text: string): Promise<{ id: string; sessionId: string }> {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text });
  expect(res.status).toBe(202);
  return res.body as { id: string; sessionId: string };
}

describe('a runner left by its supervisor', () => {
  it('answers its message once: the next launch leaves the message alone until that runner has ended', async () => {
    const host = await startHost({
      PINCER_RUNNER: 'session-serve',
      PINCER_SESSION_SERVE_RUNNER: 'process', // a runner that outlives its session process (a sandbox dies with it)
      MOCK_DELAY_MS: '4000',
      PINCER_STOP_GRACE_MS: '15000',
    });
    const stream = host.stream('orphan', { lastEventId: '0' });
    const sent = await post(host, 'orphan', 'outlive your supervisor');
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'), { readonly: true });
    const runner = await waitFor('batch in flight', () => {
      const row = db.prepare('SELECT pid, batch_ids FROM runner_state').get() as { pid: number; batch_ids: string } | undefined;
      return row && JSON.parse(row.batch_ids).includes(sent.id) ? row.pid : undefined;
    });
    db.close();
    const serve = Number(/session-serve pid (\d+), epoch/.exec(host.stderr())![1]);
    process.kill(serve, 'SIGKILL');
    await waitFor('a new launch', () => [...host.stderr().matchAll(/session-serve pid (\d+), epoch/g)].length >= 2, { timeoutMs: 30_000 });
    await stream.waitFor('the answer', (e) => e.event === 'chat' && String(e.data.text).includes('outlive your supervisor'), 30_000);
    await waitFor('the left runner gone', () => !isAlive(runner), { timeoutMs: 30_000 });
    // A later message's answer shows the next runner has run (and would have answered the first message again).
    await post(host, 'orphan', 'and then');
    await stream.waitFor('the next answer', (e) => e.event === 'chat' && String(e.data.text).includes('and then'), 30_000);
    const answers = stream.events.filter((e) => e.event === 'chat' && String(e.data.text).includes('outlive your supervisor'));
    expect(answers).toHaveLength(1);
    stream.close();
    expect(await host.stop()).toBe(0);
  }, 120_000);
});
