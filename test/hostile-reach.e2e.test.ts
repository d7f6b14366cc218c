import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import type { InboundRow, OutboundRow } from '../src/db/types.js';
import { closeAllMcpClients, startMcpClient } from './support/mcp-client.js';
import { PROCESS_RUNNER, startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { runCli } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Reach across conversations and tokens, attacked on a real host with runners in the default sandbox: an agent of
 * one conversation writing into another's chat (through its tool and straight into its session DB), a token scoped
 * to one conversation running shell commands through a task's script, and streams that outlive their credential.
 */
afterEach(async () => {
  expect(await closeAllMcpClients()).toBe(0);
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

async function createToken(home: string, ...args: string[]): Promise<string> {
  const result = await runCli(['token', 'create', ...args, '--home', home]);
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.trim();
}

async function call(host: HostHandle, method: string, urlPath: string, token: string, body?: unknown) {
  const res = await host.request(method, urlPath, body, { token });
  return res;
}

/** An SSE stream read as raw text, with any credential (the harness's own streams use the admin token). */
function rawStream(host: HostHandle, urlPath: string, headers: Record<string, string>) {
  let text = '';
  let ended = false;
  const req = http.get({ host: '127.0.0.1', port: host.port, path: urlPath, headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
    res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    res.on('end', () => (ended = true));
    res.on('close', () => (ended = true));
  });
  req.on('error', () => (ended = true));
  return { text: () => text, ended: () => ended, close: () => req.destroy() };
}

function outRow(db: ReturnType<typeof openSessionDb>, id: string): OutboundRow | undefined {
  return db.prepare('SELECT * FROM messages_out WHERE id = ?').get(id) as OutboundRow | undefined;
}

describe('an agent messages another agent group only where the host allows it', { timeout: 120_000 }, () => {
  it('refuses a send_to_agent row to a group no route allows, delivers one a route allows', async () => {
    const host = await startHost({ PINCER_ADMIN_USER_ID: 'boss', PINCER_AGENT_ROUTES: 'main>peer' });
    const stream = host.stream('main-chat');
    const res = await host.request('POST', '/v1/conversations/main-chat/messages', { text: 'set up', senderId: 'boss', sender: 'Boss' });
    expect(res.status).toBe(202);
    const { sessionId, id } = res.body as { sessionId: string; id: string };
    await stream.waitFor('reply', (e) => e.event === 'chat');
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
    const answers = (): Record<string, unknown>[] =>
      (db.prepare(`SELECT content FROM messages_in WHERE kind = 'system' ORDER BY seq`).all() as { content: string }[]).map(
        (r) => JSON.parse(r.content) as Record<string, unknown>,
      );
    // the administrator has two more groups made (each bound to a chat of its own)
    for (const name of ['peer', 'other']) {
      insertOutbound(db, {
        kind: 'system',
        content: { action: 'register_agent_group', name, folder: name, platformId: `${name}-chat`, channelType: 'http' },
        routing: { channelType: 'http', platformId: 'main-chat', threadId: null, inReplyTo: id },
      });
    }
    const made = await waitFor('both groups made', () => (answers().length >= 2 ? answers() : undefined));
    const groupId = (name: string): string =>
      String((made.find((a) => (a.result as { name?: string } | undefined)?.name === name)!.result as { agent_group_id: string }).agent_group_id);
    // the agent of main-chat writes, straight into its session DB, a message to each group
    const toOther = insertOutbound(db, {
      kind: 'chat',
      content: { text: 'do my bidding' },
      routing: { channelType: 'agent', platformId: groupId('other'), threadId: null, inReplyTo: null },
    });
    const toPeer = insertOutbound(db, {
      kind: 'chat',
      content: { text: 'hello peer' },
      routing: { channelType: 'agent', platformId: groupId('peer'), threadId: null, inReplyTo: null },
    });
    const refused = await waitFor('the refusal', () => outRow(db, toOther.id)?.delivery_error ?? undefined);
    expect(refused).toBe('not sent: agent group main may message only peer on its own (PINCER_AGENT_ROUTES) and answer a group that wrote to it, not other');
    await waitFor('the allowed one delivered', () => outRow(db, toPeer.id)?.delivered_at ?? undefined);
    db.close();
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { agentGroup: string; channelType: string }[];
    expect(sessions.filter((s) => s.channelType === 'agent').map((s) => s.agentGroup)).toEqual(['peer']);
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('point 11: an agent sends only to its own conversation and its group’s bound ones', { timeout: 120_000 }, () => {
  it('refuses a row for another conversation on delivery (written straight into the session DB) and in send_message', async () => {
    const host = await startHost();
    const evilToken = await createToken(host.home, 'evil', '--conversation', 'evil');
    const victim = host.stream('victim');
    expect((await host.request('POST', '/v1/conversations/victim/messages', { text: 'hello victim' })).status).toBe(202);
    await victim.waitFor('the victim’s reply', (e) => e.event === 'chat', 90_000);

    // the scoped token itself cannot write into victim's chat
    expect((await call(host, 'POST', '/v1/conversations/victim/messages', evilToken, { text: 'x' })).status).toBe(403);
    const evil = host.stream('evil');
    const sent = await call(host, 'POST', '/v1/conversations/evil/messages', evilToken, { text: 'hi' });
    expect(sent.status).toBe(202);
    const sessionId = sent.body.sessionId as string;
    await evil.waitFor('evil’s reply', (e) => e.event === 'chat', 90_000);

    // the agent's own tool refuses, with a tool error naming where it may send
    const mcp = await startMcpClient(host.sessionDir(sessionId));
    const refused = await mcp.call('send_message', { text: 'forged by the tool', channel: 'http', platformId: 'victim' });
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/you may send only to http:evil; http:victim is not one of them/);
    await mcp.close();

    // the agent writes the row itself: the host refuses it on delivery, and tells the agent why
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
    const to = (platformId: string) => ({ channelType: 'http', platformId, threadId: null, inReplyTo: null });
    insertOutbound(db, { id: 'forged', kind: 'chat', content: { text: 'forged into victim' }, routing: to('victim') });
    insertOutbound(db, { id: 'own', kind: 'chat', content: { text: 'to my own chat' }, routing: to('evil') });
    await evil.waitFor('the row to its own conversation', (e) => e.event === 'chat' && e.data.text === 'to my own chat', 30_000);
    const forged = await waitFor('the refusal', () => outRow(db, 'forged')?.delivery_error ?? undefined);
    expect(forged).toMatch(/not sent: this conversation may send only to http:evil, not to http:victim/);
    expect(outRow(db, 'forged')!.delivered_at ?? null).toBeNull();
    expect(victim.events.filter((e) => JSON.stringify(e.data).includes('forged'))).toEqual([]);
    expect(
      ((await host.request('GET', '/v1/conversations/victim/events')).body.events as unknown[]).filter((e) => JSON.stringify(e).includes('forged')),
    ).toEqual([]);
    db.close();
    victim.close();
    evil.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('point 13: task scripts', { timeout: 120_000 }, () => {
  it('need an admin token over HTTP, for a new task and a changed one', async () => {
    const host = await startHost();
    const scoped = await createToken(host.home, 'bridge', '--conversation', 'c');
    const marker = path.join(host.home, 'pwned');
    const posted = await call(host, 'POST', '/v1/conversations/c/tasks', scoped, { prompt: 'p', script: `touch ${marker}` });
    expect(posted.status).toBe(403);
    expect(posted.body.error).toBe('token "bridge" is limited to its conversations; a task script needs an admin token');
    // a task without a script is still the token's to schedule; giving it a script is not
    const task = await call(host, 'POST', '/v1/conversations/c/tasks', scoped, { prompt: 'p', processAfter: '2099-01-01T00:00Z' });
    expect(task.status).toBe(202);
    const patched = await call(host, 'PATCH', `/v1/tasks/${task.body.id as string}`, scoped, { script: `touch ${marker}` });
    expect(patched.status).toBe(403);
    expect((await call(host, 'PATCH', `/v1/tasks/${task.body.id as string}`, scoped, { prompt: 'q' })).status).toBe(200);
    // the admin may
    expect((await host.request('PATCH', `/v1/tasks/${task.body.id as string}`, { script: 'echo \'{"wakeAgent":false}\'' })).status).toBe(200);
    expect(fs.existsSync(marker)).toBe(false);
    expect(await host.stop()).toBe(0);
  });

  it.each([
    ['refused in a plain process runner', {}, false],
    ['run there once the administrator allows it', { PINCER_UNSANDBOXED_SCRIPTS: '1' }, true],
  ])('are %s', async (_name, env, runs) => {
    // a plain process runner on purpose: what it does with a script is the point
    const host = await startHost({ ...PROCESS_RUNNER, ...env });
    const marker = path.join(host.home, 'script-ran');
    const task = await host.request('POST', '/v1/conversations/s/tasks', {
      prompt: 'p',
      processAfter: new Date().toISOString(),
      script: `touch ${marker}; echo '{"wakeAgent":false}'`,
    });
    expect(task.status).toBe(202);
    const db = openSessionDb(path.join(host.sessionDir(task.body.sessionId as string), 'session.db'));
    const row = await waitFor(
      'the task to end',
      () => {
        const r = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(task.body.id) as InboundRow | undefined;
        return r && (r.status === 'completed' || r.status === 'failed') ? r : undefined;
      },
      { timeoutMs: 60_000 },
    );
    db.close();
    expect(fs.existsSync(marker)).toBe(runs);
    if (runs) expect(row.status).toBe('completed');
    else {
      expect(row.status).toBe('failed');
      expect(row.last_error).toMatch(/task scripts do not run in an unsandboxed \(process\) runner: .*PINCER_UNSANDBOXED_SCRIPTS=1/);
    }
    expect(await host.stop()).toBe(0);
  });
});

describe('point 14: revocation and logout end open streams at once', { timeout: 120_000 }, () => {
  it('a token’s stream ends when it is revoked, a browser session’s when it logs out', async () => {
    const host = await startHost();
    const bridge = await createToken(host.home, 'bridge', '--conversation', 'c');
    const page = await createToken(host.home, 'page', '--conversation', 'c');
    const login = await fetch(`http://127.0.0.1:${host.port}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: page }),
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const byToken = rawStream(host, '/v1/conversations/c/stream', { Authorization: `Bearer ${bridge}` });
    const byCookie = rawStream(host, '/v1/conversations/c/stream', { Cookie: cookie });
    const admin = host.stream('c');
    await waitFor('both streams connected', () => byToken.text().includes(': connected') && byCookie.text().includes(': connected'));

    expect((await runCli(['token', 'revoke', 'bridge', '--home', host.home])).status).toBe(0);
    await waitFor('the revoked token’s stream to end', () => byToken.ended(), { timeoutMs: 10_000 });
    expect(byToken.text()).toMatch(/event: disconnect\ndata: .*credentials revoked or logged out/);
    expect(lastEvent(byToken.text())).toMatch(/^event: disconnect\ndata: .*credentials revoked or logged out/);
    expect(byCookie.ended()).toBe(false);

    const logout = await fetch(`http://127.0.0.1:${host.port}/v1/logout`, { method: 'POST', headers: { Cookie: cookie } });
    expect(logout.status).toBe(200);
    await waitFor('the logged-out stream to end', () => byCookie.ended(), { timeoutMs: 10_000 });
    expect(byCookie.text()).toMatch(/credentials revoked or logged out/);
    expect(lastEvent(byCookie.text())).toMatch(/^event: disconnect\ndata: .*credentials revoked or logged out/);

    // the admin's stream goes on
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'after revocation' })).status).toBe(202);
    await admin.waitFor('the reply', (e) => e.event === 'chat' && String(e.data.text).includes('after revocation'), 90_000);
    byToken.close();
    byCookie.close();
    admin.close();
    expect(await host.stop()).toBe(0);
  });
});

/** The last event of a raw SSE text (events end with a blank line). */
function lastEvent(text: string): string {
  return text.trimEnd().split('\n\n').at(-1) ?? '';
}
