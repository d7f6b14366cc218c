import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * A query's last answer and its batch's `completed` are written in one transaction: a runner killed after the answer
 * (while its provider is still shutting down) never makes the host retry the batch, so the agent never answers twice.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('a kill after the answer', () => {
  it('never duplicates the reply', async () => {
    // The mock keeps its query open 5 s after answering, like an SDK slow to shut down.
    const host = await startHost({ MOCK_LINGER_MS: '5000' });
    const stream = host.stream('once');
    const first = await host.request('POST', '/v1/conversations/once/messages', { text: 'answer me once' });
    expect(first.status).toBe(202);
    const sessionId = String(first.body.sessionId);
    await stream.waitFor('the reply', (e) => e.event === 'chat');
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
    try {
      const row = db.prepare('SELECT status, tries FROM messages_in WHERE id = ?').get(first.body.id) as { status: string; tries: number };
      expect(row).toEqual({ status: 'completed', tries: 1 });
      const pid = (db.prepare('SELECT pid FROM runner_state').get() as { pid: number }).pid;
      process.kill(pid, 'SIGKILL');
      await waitFor('the host to notice the kill', () => host.stderr().includes(`runner ${pid} for ${sessionId} exited unexpectedly`));
    } finally {
      db.close();
    }
    // A second message starts a new runner; only its own answer comes back.
    const second = await host.request('POST', '/v1/conversations/once/messages', { text: 'and then this' });
    expect(second.status).toBe(202);
    await stream.waitFor('the second reply', (e) => e.event === 'chat' && String(e.data.text).includes('and then this'));
    const replies = stream.events.filter((e) => e.event === 'chat').map((e) => String(e.data.text));
    expect(replies.filter((text) => text.includes('answer me once'))).toHaveLength(1);
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
