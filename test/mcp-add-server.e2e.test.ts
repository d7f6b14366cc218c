import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { runCli } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * `add_mcp_server` through a real host: the built-in runtime's model calls the tool, the host puts the request to the
 * chat as a question with buttons, only an admin's answer counts, an approved request adds the server, a refused one
 * changes nothing, and the request and decision stay in the central DB.
 */
const MEMORY = path.resolve('node_modules/@modelcontextprotocol/server-memory/dist/index.js');
const list = async (home: string) => (await runCli(['mcp-server', 'list', '--home', home], { PATH: process.env.PATH, HOME: process.env.HOME })).stdout;

afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await closeFakeOpenAIs();
});

interface RequestRow {
  name: string;
  status: string;
  decided_by: string | null;
  decided_at: string | null;
  reason: string;
}
function requestRows(host: HostHandle): RequestRow[] {
  const db = new Database(path.join(host.home, 'pincer.db'), { readonly: true });
  try {
    return db.prepare('SELECT name, status, decided_by, decided_at, reason FROM mcp_server_requests ORDER BY requested_at, id').all() as RequestRow[];
  } finally {
    db.close();
  }
}
function systemAnswers(host: HostHandle, sessionId: string): Record<string, unknown>[] {
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
  try {
    return (db.prepare(`SELECT content FROM messages_in WHERE kind = 'system' ORDER BY seq`).all() as { content: string }[])
      .map((r) => JSON.parse(r.content) as Record<string, unknown>)
      .filter((c) => c.action === 'add_mcp_server');
  } finally {
    db.close();
  }
}

describe('add_mcp_server: the agent asks, the admin decides', { timeout: 180_000 }, () => {
  it('approved by the admin (not by anyone else), refused, each in the host records and told to the agent', async () => {
    const fake = await startFakeOpenAI();
    fake.script(
      {
        call: 'mcp__pincer__add_mcp_server',
        args: {
          name: 'memory',
          command: process.execPath,
          args: [MEMORY],
          env: { MEMORY_FILE_PATH: 'memory.jsonl' },
          reason: 'to remember what people tell me',
        },
      },
      { text: 'I asked the admin.' },
    );
    // in the default runner mode (bubblewrap where it works): the request is made from inside the sandbox
    const host = await startHost({
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: fake.baseUrl,
      PINCER_MODEL_MAX_RETRIES: '0',
      PINCER_ADMIN_USER_ID: 'boss',
    });
    const stream = host.stream('ops');
    const sent = (await host.request('POST', '/v1/conversations/ops/messages', { text: 'get yourself a memory', senderId: 'boss' })).body as {
      sessionId: string;
      id: string;
    };

    const question = await stream.waitFor('the admin is asked', (e) => e.event === 'question', 90_000);
    expect(question.data).toMatchObject({
      title: 'Add an MCP server?',
      options: [
        { label: 'Approve', value: 'approve' },
        { label: 'Refuse', value: 'refuse' },
      ],
    });
    expect(question.data.question).toContain(`asks to add the MCP server "memory": stdio ${process.execPath} ${MEMORY} (env: MEMORY_FILE_PATH)`);
    expect(question.data.question).toContain('Why: to remember what people tell me');
    const questionId = question.data.questionId as string;
    // The model was told the request is pending (the tool's result, then the host's answer).
    await waitFor(
      'the pending answer',
      () => systemAnswers(host, sent.sessionId).some((a) => (a.result as { status?: string } | undefined)?.status === 'pending'),
      { timeoutMs: 60_000 },
    );
    expect(await list(host.home)).toBe("main\t(no MCP servers besides Pincer's)\n");

    // A token limited to the conversation cannot vouch for the admin it names: refused, the question stays open.
    const scoped = (await runCli(['token', 'create', 'ops-bridge', '--conversation', 'ops', '--home', host.home])).stdout.trim();
    const asBoss = await fetch(`http://127.0.0.1:${host.port}/v1/conversations/ops/answers`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${scoped}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ questionId, selectedOption: 'approve', userId: 'boss' }),
    });
    expect(asBoss.status).toBe(403);
    expect(requestRows(host)).toMatchObject([{ name: 'memory', status: 'pending', decided_by: null }]);

    // Someone who is not an admin cannot decide; nothing changes and the question stays open.
    const answer = (userId: string, selectedOption: string) => host.request('POST', '/v1/conversations/ops/answers', { questionId, selectedOption, userId });
    const byOther = await answer('mallory', 'approve');
    expect(byOther.status).toBe(403);
    expect(byOther.body.error).toBe('only an admin of agent group main may decide on MCP server "memory" (user "mallory" is not one)');
    expect(requestRows(host)).toMatchObject([{ name: 'memory', status: 'pending', decided_by: null }]);
    expect(await list(host.home)).toBe("main\t(no MCP servers besides Pincer's)\n");

    expect((await answer('boss', 'approve')).status).toBe(202);
    expect(await list(host.home)).toBe(`main\tmemory\tstdio ${process.execPath} ${MEMORY} (env: MEMORY_FILE_PATH)\n`);
    const notice = await stream.waitFor('the decision in the chat', (e) => e.event === 'notice' && String(e.data.text).includes('approved'));
    expect(notice.data.text).toBe('boss approved the MCP server "memory" for agent group main; the agent has its tools from its next start.');
    const [approved] = requestRows(host);
    expect(approved).toMatchObject({ name: 'memory', status: 'approved', decided_by: 'boss', reason: 'to remember what people tell me' });
    expect(approved!.decided_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    // The agent is told (a system message that wakes it), and its model sees it.
    expect(systemAnswers(host, sent.sessionId).at(-1)).toMatchObject({ status: 'success', result: { name: 'memory', decision: 'approved', by: 'boss' } });
    const seen = (r: { userTexts: string[] }) => r.userTexts.some((t) => t.includes('[SYSTEM RESPONSE]') && t.includes('approved') && t.includes('memory'));
    await waitFor('the model sees the decision', () => fake.modelRequests().some(seen), { timeoutMs: 90_000 });
    const again = await answer('boss', 'refuse');
    expect(again.status).toBe(409);
    expect(again.body.error).toContain('was decided already (approved)');

    // A second request, refused: the configuration stays as it was.
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'));
    insertOutbound(db, {
      kind: 'system',
      content: { action: 'add_mcp_server', name: 'shell', server: { command: 'sh', args: ['-c', 'cat ~/.ssh/id_rsa'] }, reason: 'trust me' },
      routing: { channelType: 'http', platformId: 'ops', threadId: null, inReplyTo: sent.id },
    });
    db.close();
    const second = await stream.waitFor('the second question', (e) => e.event === 'question' && e.data.questionId !== questionId, 60_000);
    expect(
      (await host.request('POST', '/v1/conversations/ops/answers', { questionId: second.data.questionId, selectedOption: 'refuse', userId: 'boss' })).status,
    ).toBe(202);
    await stream.waitFor('the refusal in the chat', (e) => e.event === 'notice' && String(e.data.text).includes('refused'));
    expect(await list(host.home)).toBe(`main\tmemory\tstdio ${process.execPath} ${MEMORY} (env: MEMORY_FILE_PATH)\n`);
    expect(requestRows(host).map((r) => [r.name, r.status, r.decided_by])).toEqual([
      ['memory', 'approved', 'boss'],
      ['shell', 'refused', 'boss'],
    ]);
    expect(systemAnswers(host, sent.sessionId).at(-1)).toEqual({
      action: 'add_mcp_server',
      status: 'error',
      error: 'the admin (boss) refused to add the MCP server "shell"',
    });
    // The admin's route lists both, with their decisions.
    const requests = (await host.request('GET', '/v1/groups/main/mcp-server-requests')).body.requests as { name: string; status: string }[];
    expect(requests.map((r) => [r.name, r.status]).sort()).toEqual([
      ['memory', 'approved'],
      ['shell', 'refused'],
    ]);
    await host.stop();
  });

  it('refuses a bad request at once (a reserved name, no admin to ask)', async () => {
    const host = await startHost();
    const stream = host.stream('ops');
    const sent = (await host.request('POST', '/v1/conversations/ops/messages', { text: 'hello' })).body as { sessionId: string; id: string };
    await stream.waitFor('reply', (e) => e.event === 'chat');
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'));
    const routing = { channelType: 'http', platformId: 'ops', threadId: null, inReplyTo: sent.id };
    insertOutbound(db, { kind: 'system', content: { action: 'add_mcp_server', name: 'pincer', server: { command: 'node' }, reason: 'x' }, routing });
    insertOutbound(db, { kind: 'system', content: { action: 'add_mcp_server', name: 'memory', server: { command: 'node' }, reason: 'x' }, routing });
    db.close();
    await waitFor('both answered', () => systemAnswers(host, sent.sessionId).length === 2, { timeoutMs: 60_000 });
    expect(systemAnswers(host, sent.sessionId).map((a) => a.error)).toEqual([
      `invalid MCP server: pincer: "pincer" is the name of Pincer's own server; choose another`,
      'agent group main has no admin who could approve it (an admin is named with PINCER_ADMIN_USER_ID)',
    ]);
    expect(stream.events.filter((e) => e.event === 'question')).toEqual([]);
    expect(requestRows(host)).toEqual([]);
    await host.stop();
  });
});
