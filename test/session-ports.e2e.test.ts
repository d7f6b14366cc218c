import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import type { InboundRow } from '../src/db/types.js';
import { startFakeTelegram } from './support/fake-telegram.js';
import { startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * The host's behaviour through both session ports, one suite: `local` (the session folder, its engine in the host)
 * and `session-serve` (PINCER_RUNNER=session-serve: one `pincer session-serve` process per session over loopback).
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

// The local port with process runners; session-serve with the runners users get by default (auto: the sandbox).
const PORTS = [
  ['local', { PINCER_RUNNER: 'process' }],
  ['session-serve', { PINCER_RUNNER: 'session-serve', PINCER_SESSION_SERVE_RUNNER: 'auto' }],
] as const;

interface Event {
  type: string;
  text?: string;
  inReplyTo?: string | null;
}

async function events(host: HostHandle, conversation: string): Promise<Event[]> {
  return (await host.request('GET', `/v1/conversations/${conversation}/events?after=0`)).body.events as Event[];
}

function answers(host: HostHandle, conversation: string, marker: string, count = 1): Promise<Event[]> {
  return waitFor(
    `${count} answer(s) with "${marker}"`,
    async () => {
      const found = (await events(host, conversation)).filter((e) => e.type === 'chat' && e.text?.includes(marker));
      return found.length >= count ? found : undefined;
    },
    { timeoutMs: 40_000, intervalMs: 50 },
  );
}

async function send(
  host: HostHandle,
  conversation: string,
  text: string,
  attachments?: unknown[],
): Promise<{ sessionId: string; id: string; seq: number | null }> {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text, ...(attachments ? { attachments } : {}) });
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string; seq: number | null };
}

describe.each(PORTS)('through the %s session port', (kind, env) => {
  it('answers a message and its follow-ups, each once, and shows the session with its runner', async () => {
    const host = await startHost({ ...env });
    const first = await send(host, 'c1', 'first question');
    expect(first.seq).toBe(1);
    await answers(host, 'c1', 'first question');
    for (const text of ['second', 'third']) await send(host, 'c1', text);
    await answers(host, 'c1', 'third');
    const all = (await events(host, 'c1')).filter((e) => e.type === 'chat');
    expect(all.filter((e) => e.text?.includes('first question'))).toHaveLength(1);
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string; provider: string | null; pending: number }[];
    expect(sessions).toEqual([expect.objectContaining({ id: first.sessionId, provider: 'mock', pending: 0 })]);
    const log = (await host.request('GET', `/v1/sessions/${first.sessionId}/log?lines=50`)).body.lines as string[];
    expect(log.join('\n')).toMatch(/\[runner\] picked 1 message/);
    expect(await host.stop()).toBe(0);
  }, 90_000);

  it('runs a scheduled task, lists and cancels a later one', async () => {
    const host = await startHost({ ...env });
    await send(host, 't', 'hello');
    await answers(host, 't', 'hello');
    const now = await host.request('POST', '/v1/conversations/t/tasks', { prompt: 'task right now', processAfter: new Date().toISOString() });
    expect(now.status).toBe(202);
    expect((await answers(host, 't', 'task right now'))[0]!.text).toMatch(/\[SCHEDULED TASK\]/);
    const later = await host.request('POST', '/v1/conversations/t/tasks', { prompt: 'much later', processAfter: '2099-01-01T00:00:00Z' });
    const listed = (await host.request('GET', '/v1/tasks')).body.tasks as { id: string; prompt: string }[];
    expect(listed.map((t) => t.prompt)).toEqual(['much later']);
    expect((await host.request('POST', `/v1/tasks/${(later.body as { id: string }).id}/cancel`)).status).toBe(200);
    expect((await host.request('GET', '/v1/tasks')).body.tasks).toEqual([]);
    expect(await host.stop()).toBe(0);
  }, 90_000);

  it('a stopped runner is started again for the next message, and a restart starts one at once', async () => {
    const host = await startHost({ ...env });
    const { sessionId } = await send(host, 'r', 'one');
    await answers(host, 'r', 'one');
    expect((await host.request('POST', `/v1/sessions/${sessionId}/stop`)).status).toBe(200);
    await send(host, 'r', 'two');
    await answers(host, 'r', 'two');
    expect((await host.request('POST', `/v1/sessions/${sessionId}/restart`)).status).toBe(200);
    await waitFor('a runner again', async () => ((await host.request('GET', '/v1/sessions')).body.sessions as { runner: unknown }[])[0]!.runner, {
      timeoutMs: 30_000,
    });
    expect(await host.stop()).toBe(0);
  }, 90_000);

  it('delivers a question and a file the agent sent, takes the answer once, and gives the agent a file sent to it', async () => {
    const host = await startHost({ ...env });
    const stream = host.stream('qa');
    const sent = await send(host, 'qa', 'start');
    await stream.waitFor('reply', (e) => e.event === 'chat');
    // what the agent's MCP server writes: a question, and a message with a file from its outbox
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'));
    const routing = { channelType: 'http', platformId: 'qa', threadId: null, inReplyTo: sent.id };
    insertOutbound(db, {
      kind: 'chat',
      content: { operation: 'ask_question', questionId: 'q-1', title: 'Confirm', question: 'Delete it?', options: [{ label: 'Yes', value: 'yes' }] },
      routing,
    });
    fs.mkdirSync(path.join(host.sessionDir(sent.sessionId), 'outbox', 'file-msg'), { recursive: true });
    fs.writeFileSync(path.join(host.sessionDir(sent.sessionId), 'outbox', 'file-msg', 'notes.txt'), 'file body');
    insertOutbound(db, { id: 'file-msg', kind: 'chat', content: { text: 'see attached', files: ['notes.txt'] }, routing });
    const question = await stream.waitFor('question', (e) => e.event === 'question');
    expect(question.data).toMatchObject({ questionId: 'q-1', title: 'Confirm' });
    const withFile = await stream.waitFor('file message', (e) => e.event === 'chat' && e.data.text === 'see attached');
    const [url] = withFile.data.fileUrls as string[];
    const download = await fetch(`http://127.0.0.1:${host.port}${url}`, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });
    expect(await download.text()).toBe('file body');
    const answer = await host.request('POST', '/v1/conversations/qa/answers', { questionId: 'q-1', selectedOption: 'yes', userId: 'u1' });
    expect(answer.body).toMatchObject({ id: expect.any(String) });
    expect(answer.status).toBe(202);
    const row = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(answer.body.id) as InboundRow;
    expect(JSON.parse(row.content)).toEqual({ type: 'question_response', questionId: 'q-1', selectedOption: 'yes', userId: 'u1' });
    const again = await host.request('POST', '/v1/conversations/qa/answers', { questionId: 'q-1', selectedOption: 'yes' });
    expect(again.status).toBe(400);
    db.close();
    // a file in: saved into the session's downloads, and the agent is told where
    await send(host, 'qa', 'read this', [{ type: 'file', name: 'in.txt', data: Buffer.from('hello in').toString('base64') }]);
    const [read] = await answers(host, 'qa', 'read this');
    const where = /\[file available at: ([^\]]+in\.txt)\]/.exec(read!.text!)![1]!;
    expect(fs.readFileSync(path.join(host.sessionDir(sent.sessionId), where.replace(/^.*\/downloads\//, 'downloads/')), 'utf8')).toBe('hello in');
    stream.close();
    expect(await host.stop()).toBe(0);
  }, 90_000);

  it('answers a Telegram chat through the fake Bot API', async () => {
    const telegram = await startFakeTelegram();
    try {
      const host = await startHost({ ...env, TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_BASE_URL: telegram.url });
      await waitFor('telegram connected', () => /telegram: connected/.test(host.stderr()), { timeoutMs: 30_000 });
      telegram.userSends({ chatId: 601, userId: 601, text: 'hello over telegram' });
      const sent = await telegram.waitForSent('the answer', (c) => String(c.body.text ?? '').includes('hello over telegram'), 40_000);
      expect(String(sent.body.chat_id)).toBe('601');
      expect(await host.stop()).toBe(0);
    } finally {
      await telegram.close();
    }
  }, 90_000);

  it('refuses a turn over the budget with the reason, and answers again once it is raised', async () => {
    const host = await startHost({ ...env, MOCK_USAGE: JSON.stringify({ costUsd: 1 }) });
    await send(host, 'b', 'spend');
    await answers(host, 'b', 'spend');
    const set = spawnSync(process.execPath, [BUILT_CLI, 'budget', 'set', 'main', '--daily-usd', '1'], {
      env: { PATH: process.env.PATH, PINCER_HOME: host.home },
      encoding: 'utf8',
    });
    expect(set.status, set.stderr).toBe(0);
    await waitFor('the turn is in the ledger', async () => ((await host.request('GET', '/v1/usage')).body.total as { turns: number }).turns === 1, {
      timeoutMs: 30_000,
    });
    const refused = await host.request('POST', '/v1/conversations/b/messages', { text: 'more' });
    expect(refused.status).toBe(429);
    expect(String(refused.body.error)).toMatch(/daily budget of \$1\.00/);
    expect((await host.request('PUT', '/v1/budgets/main', { period: 'daily', unit: 'usd', amount: 10 })).status).toBe(200);
    await send(host, 'b', 'after the raise');
    await answers(host, 'b', 'after the raise').catch((err: unknown) => {
      const logs = path.join(host.home, 'logs');
      const session = fs
        .readdirSync(logs)
        .map((f) => fs.readFileSync(path.join(logs, f), 'utf8'))
        .join('\n');
      throw new Error(`${String(err)}\nhost log:\n${host.stderr().slice(-3000)}\nsession log:\n${session.slice(-4000)}`);
    });
    expect(await host.stop()).toBe(0);
  }, 90_000);
});

describe('session-serve killed under a running host', () => {
  it('is launched again with a new epoch; what was accepted meanwhile is answered, each once', async () => {
    const host = await startHost({ PINCER_RUNNER: 'session-serve', PINCER_SESSION_SERVE_RUNNER: 'process' });
    await send(host, 'k', 'before');
    await answers(host, 'k', 'before');
    const pid = Number(/session-serve pid (\d+), epoch 1/.exec(host.stderr())![1]);
    process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 5; i++) await send(host, 'k', `after-${i}`);
    await answers(host, 'k', 'after-4');
    await waitFor('epoch 2', () => /session-serve pid \d+, epoch 2/.test(host.stderr()), { timeoutMs: 30_000 });
    const chats = (await events(host, 'k')).filter((e) => e.type === 'chat');
    for (let i = 0; i < 5; i++) expect(chats.filter((e) => e.text?.includes(`after-${i}<`))).toHaveLength(1);
    expect(chats.filter((e) => e.text?.includes('before'))).toHaveLength(1);
    expect(await host.stop()).toBe(0);
  }, 90_000);
});
