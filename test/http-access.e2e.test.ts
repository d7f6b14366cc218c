import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './support/runner-harness.js';
import { startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Who may use the HTTP API, through the real `pincer host --http 0`: tokens made with `pincer token` (admin, or
 * limited to named conversations), revoked at once on a running host, and the browser session cookie of a token login.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

function pincerToken(home: string, ...args: string[]) {
  return runCli(['token', ...args, '--home', home]);
}

async function createToken(home: string, ...args: string[]): Promise<string> {
  const result = await pincerToken(home, 'create', ...args);
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.trim();
}

async function call(
  host: HostHandle,
  method: string,
  urlPath: string,
  init: { token?: string; cookie?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const res = await fetch(`http://127.0.0.1:${host.port}${urlPath}`, {
    method,
    headers: {
      ...(init.token ? { Authorization: `Bearer ${init.token}` } : {}),
      ...(init.cookie ? { Cookie: init.cookie } : {}),
      ...(init.body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...init.headers,
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

/** Read an SSE stream until `predicate` matches its text so far; then close it. */
async function readStream(
  host: HostHandle,
  urlPath: string,
  headers: Record<string, string>,
  predicate: (text: string) => boolean,
): Promise<{ status: number; text: string }> {
  const controller = new AbortController();
  const res = await fetch(`http://127.0.0.1:${host.port}${urlPath}`, { headers, signal: controller.signal });
  if (res.status !== 200) return { status: res.status, text: await res.text() };
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  await waitFor('stream text', async () => {
    const { value, done } = await reader.read();
    if (value) text += decoder.decode(value, { stream: true });
    return predicate(text) || done;
  });
  controller.abort();
  return { status: res.status, text };
}

describe('scoped tokens', () => {
  it('limits a bridge token to its conversations, everywhere, and revokes it at once', async () => {
    const host = await startHost();
    const bridge = await createToken(host.home, 'bridge', '--conversation', 'alpha');
    expect(bridge).toMatch(/^pincer_/);

    // the admin sets up a second conversation with a reply and a task
    const stream = host.stream('beta');
    await host.request('POST', '/v1/conversations/beta/messages', { text: 'secret of beta' });
    const betaReply = await stream.waitFor('beta reply', (e) => e.event === 'chat');
    const betaTask = (await host.request('POST', '/v1/conversations/beta/tasks', { prompt: 'beta task', processAfter: '2099-01-01T00:00Z' })).body.id as string;
    stream.close();

    // its own conversation works
    expect((await call(host, 'POST', '/v1/conversations/alpha/messages', { token: bridge, body: { text: 'hi' } })).status).toBe(202);
    const alphaTask = (
      await call(host, 'POST', '/v1/conversations/alpha/tasks', { token: bridge, body: { prompt: 'alpha task', processAfter: '2099-01-01T00:00Z' } })
    ).body.id;
    const alphaStream = await readStream(host, '/v1/conversations/alpha/stream', { Authorization: `Bearer ${bridge}` }, (t) => t.includes('event: chat'));
    expect(alphaStream.status).toBe(200);

    // the others do not: 403 for a conversation named in the path, 404 for things found by id, filtered lists
    for (const [method, route, body] of [
      ['POST', '/v1/conversations/beta/messages', { text: 'let me in' }],
      ['POST', '/v1/conversations/beta/answers', { questionId: 'q', selectedOption: 'x' }],
      ['POST', '/v1/conversations/beta/tasks', { prompt: 'x' }],
      ['GET', '/v1/conversations/beta/events', undefined],
      ['POST', '/v1/webhooks/ci?conversation=beta&event=push', { a: 1 }],
    ] as const) {
      const res = await call(host, method, route, { token: bridge, body });
      expect(res.status, route).toBe(403);
      expect(res.body.error).toBe('token "bridge" may not use conversation "beta"');
    }
    expect((await readStream(host, '/v1/conversations/beta/stream', { Authorization: `Bearer ${bridge}` }, () => true)).status).toBe(403);
    expect((await call(host, 'GET', `/v1/tasks/${betaTask}`, { token: bridge })).status).toBe(404);
    expect((await call(host, 'POST', `/v1/tasks/${betaTask}/cancel`, { token: bridge })).status).toBe(404);
    expect((await call(host, 'GET', `/v1/files/${betaReply.id}/0`, { token: bridge })).status).toBe(404);
    expect(((await call(host, 'GET', '/v1/tasks', { token: bridge })).body.tasks as { id: string }[]).map((t) => t.id)).toEqual([alphaTask]);
    expect(((await call(host, 'GET', '/v1/sessions', { token: bridge })).body.sessions as { platformId: string }[]).map((s) => s.platformId)).toEqual([
      'alpha',
    ]);
    expect(((await call(host, 'GET', '/v1/conversations', { token: bridge })).body.conversations as { id: string }[]).map((c) => c.id)).toEqual(['alpha']);
    // the refused message was not stored: beta still has its one message
    expect(((await host.request('GET', '/v1/tasks')).body.tasks as unknown[]).length).toBe(2);
    expect((await host.request('GET', '/v1/conversations/beta/events')).body.events).toHaveLength(1);

    // an admin token made with `pincer token` sees everything
    const ops = await createToken(host.home, 'ops', '--admin');
    expect(((await call(host, 'GET', '/v1/sessions', { token: ops })).body.sessions as unknown[]).length).toBe(2);

    const list = await pincerToken(host.home, 'list');
    expect(list.stdout).toMatch(/^bridge\tconversations alpha\tcreated /m);
    expect(list.stdout).toMatch(/^ops\tevery conversation \(admin\)/m);
    expect(list.stdout).not.toContain(bridge);

    expect((await pincerToken(host.home, 'revoke', 'bridge')).status).toBe(0);
    expect((await call(host, 'GET', '/v1/conversations/alpha/events', { token: bridge })).status).toBe(401);
    expect((await pincerToken(host.home, 'list')).stdout).toMatch(/^bridge\t.*\trevoked /m);
    expect(await host.stop()).toBe(0);
  });

  it.each([
    [['create', 'nobody'], /needs --conversation ID \(one or more\) or --admin/],
    [['create', 'both', '--admin', '--conversation', 'a'], /give --admin or --conversation, not both/],
    [['create', 'bad name!', '--admin'], /token name "bad name!": use 1–64 of/],
    [['revoke', 'ghost'], /no live token named "ghost"/],
  ])('pincer token %j fails with one clear line and exit 2', async (args, message) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-token-'));
    await createToken(home, 'first', '--admin');
    const result = await pincerToken(home, ...args);
    expect(result.status).toBe(2);
    expect(result.stderr.trim()).toMatch(message);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    const again = await pincerToken(home, 'create', 'first', '--admin');
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/a token named "first" exists already/);
  });

  it('refuses to list the tokens of a home that does not exist, in one line', async () => {
    const result = await pincerToken('/nonexistent/pincer-home', 'list');
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      'pincer: no Pincer home at /nonexistent/pincer-home (no pincer.db); pass --home or PINCER_HOME (see pincer token list --help)\n',
    );
  });
});

describe('browser session', () => {
  it('logs in with a token into an HttpOnly SameSite=Strict cookie that works for the API and the stream', async () => {
    const host = await startHost();
    const wrong = await call(host, 'POST', '/v1/login', { body: { token: 'not-a-token' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('set-cookie')).toBeNull();

    const bridge = await createToken(host.home, 'page', '--conversation', 'web');
    const login = await call(host, 'POST', '/v1/login', { body: { token: bridge } });
    expect(login.status).toBe(200);
    expect(login.body).toEqual({ name: 'page', admin: false, conversations: ['web'] });
    const setCookie = login.headers.get('set-cookie')!;
    expect(setCookie).toMatch(/^pincer_session=[\w-]+;/);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    expect(setCookie).toMatch(/Path=\//);
    const cookie = setCookie.split(';')[0]!;

    expect((await call(host, 'GET', '/v1/whoami', { cookie })).body).toMatchObject({ name: 'page' });
    expect(
      (
        await call(host, 'POST', '/v1/conversations/web/messages', {
          cookie,
          body: { text: 'from the page' },
          headers: { Origin: `http://127.0.0.1:${host.port}` },
        })
      ).status,
    ).toBe(202);
    const stream = await readStream(host, '/v1/conversations/web/stream', { Cookie: cookie }, (t) => t.includes('event: chat'));
    expect(stream.status).toBe(200);
    expect(stream.text).toContain('from the page');
    // the cookie carries the token's scope
    expect((await call(host, 'GET', '/v1/conversations/other/events', { cookie })).status).toBe(403);

    // another site: refused, and CORS stays closed
    const foreign = await call(host, 'POST', '/v1/conversations/web/messages', { cookie, body: { text: 'csrf' }, headers: { Origin: 'http://evil.example' } });
    expect(foreign.status).toBe(403);
    expect((await call(host, 'POST', '/v1/login', { body: { token: bridge }, headers: { Origin: 'http://evil.example' } })).status).toBe(403);
    const preflight = await call(host, 'OPTIONS', '/v1/conversations/web/messages', {
      headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect((await host.request('GET', '/v1/conversations/web/events')).body.events).toHaveLength(1);

    // logout ends the session; so does revoking the token behind it
    expect((await call(host, 'POST', '/v1/logout', { cookie })).headers.get('set-cookie')).toMatch(/pincer_session=;.*Max-Age=0/);
    expect((await call(host, 'GET', '/v1/whoami', { cookie })).status).toBe(401);
    const second = (await call(host, 'POST', '/v1/login', { body: { token: bridge } })).headers.get('set-cookie')!.split(';')[0]!;
    expect((await call(host, 'GET', '/v1/whoami', { cookie: second })).status).toBe(200);
    await pincerToken(host.home, 'revoke', 'page');
    expect((await call(host, 'GET', '/v1/whoami', { cookie: second })).status).toBe(401);

    // the admin token logs in as admin
    const admin = (await call(host, 'POST', '/v1/login', { body: { token: TEST_TOKEN } })).headers.get('set-cookie')!.split(';')[0]!;
    expect((await call(host, 'GET', '/v1/whoami', { cookie: admin })).body).toEqual({ name: 'admin', admin: true, conversations: null });
    expect(await host.stop()).toBe(0);
  });
});
