import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { PID_SIGNALLED_RUNNER, startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * An answer and the `completed` of the messages it answers are written in one transaction: a runner killed after the
 * last answer (while its provider is still shutting down), or between the answers to a query's pushed prompts, never
 * makes the host retry what was answered, so the agent never answers it twice.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('a kill after the answer', () => {
  it('never duplicates the reply', async () => {
    // The mock keeps its query open 5 s after answering, like an SDK slow to shut down.
    const host = await startHost({ ...PID_SIGNALLED_RUNNER, MOCK_LINGER_MS: '5000' });
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

describe('a kill between the answers to a query’s pushed prompts', () => {
  it('does not run the prompt already answered again', async () => {
    // Each answer takes 1.5 s: the second message is pushed into the running query and answered 1.5 s after the first.
    const host = await startHost({ ...PID_SIGNALLED_RUNNER, MOCK_DELAY_MS: '1500' });
    const stream = host.stream('pushed');
    const first = await host.request('POST', '/v1/conversations/pushed/messages', { text: 'first prompt' });
    const sessionId = String(first.body.sessionId);
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
    try {
      const status = (id: unknown) => (db.prepare('SELECT status FROM messages_in WHERE id = ?').get(id) as { status: string }).status;
      await waitFor('the first message in work', () => status(first.body.id) === 'processing', { timeoutMs: 20_000 });
      const second = await host.request('POST', '/v1/conversations/pushed/messages', { text: 'pushed prompt' });
      expect(second.status).toBe(202);
      await waitFor('the push', () => status(second.body.id) === 'processing', { timeoutMs: 20_000 });
      await stream.waitFor('the first answer', (e) => e.event === 'chat' && String(e.data.text).includes('first prompt'));
      expect(status(first.body.id)).toBe('completed'); // completed with its own answer, before the query ended
      const pid = (db.prepare('SELECT pid FROM runner_state').get() as { pid: number }).pid;
      process.kill(pid, 'SIGKILL');
    } finally {
      db.close();
    }
    await stream.waitFor('the pushed prompt answered after the kill', (e) => e.event === 'chat' && String(e.data.text).includes('pushed prompt'), 30_000);
    const replies = stream.events.filter((e) => e.event === 'chat').map((e) => String(e.data.text));
    expect(replies.filter((text) => text.includes('first prompt'))).toHaveLength(1);
    stream.close();
    expect(await host.stop()).toBe(0);
  }, 60_000);
});

describe('a host killed between delivering an answer and recording it', () => {
  it('shows the answer once: the next host delivers the row again, and the HTTP mailbox stores it once', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-once-'));
    let host = await startHost({}, home);
    const sent = await host.request('POST', '/v1/conversations/again/messages', { text: 'deliver me once' });
    const sessionId = String(sent.body.sessionId);
    const chats = async () =>
      ((await host.request('GET', '/v1/conversations/again/events?after=0')).body.events as { type: string; text?: string }[]).filter((e) => e.type === 'chat');
    await waitFor('the answer', async () => (await chats()).length === 1);
    expect(await host.stop()).toBe(0);
    // As if the host had died after storing the event and before marking the row delivered.
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
    expect(db.prepare('UPDATE messages_out SET delivered_at = NULL WHERE in_reply_to = ?').run(sent.body.id).changes).toBe(1);
    db.close();

    host = await startHost({}, home);
    await host.request('POST', '/v1/conversations/again/messages', { text: 'and the next one' });
    await waitFor('the next answer', async () => (await chats()).some((e) => e.text?.includes('and the next one')));
    expect((await chats()).filter((e) => e.text?.includes('deliver me once'))).toHaveLength(1);
    const check = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
    expect(check.prepare('SELECT delivered_at IS NOT NULL AS delivered FROM messages_out WHERE in_reply_to = ?').get(sent.body.id)).toEqual({ delivered: 1 });
    check.close();
    expect(await host.stop()).toBe(0);
  });
});
