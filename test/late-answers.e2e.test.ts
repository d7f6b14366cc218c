import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { PID_SIGNALLED_RUNNER, startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * An answer that comes after its question closed — the MCP server's wait timed out, or the runner that asked it
 * stopped — is not left pending forever: it reaches the agent as a chat message, and the agent answers it. The
 * question rows are written straight into the session DB, as the MCP server writes them.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

async function askedQuestion(host: HostHandle, conversation: string, questionId: string, extra: Record<string, unknown>) {
  const stream = host.stream(conversation);
  const sent = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text: 'start' });
  expect(sent.status).toBe(202);
  const sessionId = String(sent.body.sessionId);
  await stream.waitFor('first reply', (e) => e.event === 'chat');
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
  insertOutbound(db, {
    kind: 'chat',
    content: { operation: 'ask_question', questionId, title: 'Deploy', question: 'Ship it?', options: [{ label: 'Yes', value: 'yes' }], ...extra },
    routing: { channelType: 'http', platformId: conversation, threadId: null, inReplyTo: String(sent.body.id) },
  });
  await stream.waitFor('the question', (e) => e.event === 'question');
  return { stream, db, sessionId };
}

describe('late answers to questions', () => {
  it('an answer after the question timed out reaches the agent as a message', async () => {
    const host = await startHost();
    const { stream, db } = await askedQuestion(host, 'late', 'q-expired', { expiresAt: new Date(Date.now() - 1000).toISOString() });
    const answer = await host.request('POST', '/v1/conversations/late/answers', { questionId: 'q-expired', selectedOption: 'yes', userId: 'u1' });
    expect(answer.status).toBe(202);
    const reply = await stream.waitFor(
      'the agent answers the late answer',
      (e) => e.event === 'chat' && String(e.data.text).includes('came after the question had closed'),
    );
    expect(String(reply.data.text)).toContain('&quot;Deploy&quot;');
    expect(String(reply.data.text)).toContain(': yes');
    const row = db.prepare('SELECT kind, status FROM messages_in WHERE id = ?').get(answer.body.id);
    expect(row).toEqual({ kind: 'chat', status: 'completed' });
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('an answer to a question of a runner that stopped reaches the next runner as a message', async () => {
    const host = await startHost(PID_SIGNALLED_RUNNER);
    // No expiry yet, but the runner that asked is killed: nobody waits for the answer any more.
    const { stream, db, sessionId } = await askedQuestion(host, 'restart', 'q-orphan', { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    const pid = (db.prepare('SELECT pid FROM runner_state').get() as { pid: number }).pid;
    process.kill(pid, 'SIGKILL');
    await waitFor('the host to notice the kill', () => host.stderr().includes(`runner ${pid} for ${sessionId} exited unexpectedly`));
    const next = await host.request('POST', '/v1/conversations/restart/messages', { text: 'are you there' });
    expect(next.status).toBe(202);
    await stream.waitFor('the new runner answers', (e) => e.event === 'chat' && String(e.data.text).includes('are you there'));
    const answer = await host.request('POST', '/v1/conversations/restart/answers', { questionId: 'q-orphan', selectedOption: 'yes' });
    expect(answer.status).toBe(202);
    await stream.waitFor('the agent answers the late answer', (e) => e.event === 'chat' && String(e.data.text).includes('came after the question had closed'));
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
