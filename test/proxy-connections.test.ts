import http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CredentialProxy } from '../src/host/credential-proxy.js';
import { createLogger } from '../src/shared/log.js';
import { closeServer, listenOnLoopback } from './support/fake-http.js';
import { waitFor } from './support/wait.js';

/**
 * The credential proxy's connection caps, in process against a fake upstream on loopback: per runner on its own
 * socket and on 127.0.0.1 (by placeholder), and in all. The attack on a real host is in hostile-proxy.e2e.
 */
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(limits: { perRunner?: number; global?: number }): Promise<{ proxy: CredentialProxy; logs: string[]; upstream: string[] }> {
  const upstream: string[] = [];
  const fake = http.createServer((req, res) => {
    upstream.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  const url = await listenOnLoopback(fake);
  cleanups.push(() => closeServer(fake));
  const logs: string[] = [];
  const log = createLogger('test', (line) => logs.push(line));
  const proxy = CredentialProxy.fromEnvironment({ ANTHROPIC_API_KEY: 'sk-real', ANTHROPIC_BASE_URL: url }, log, undefined, {
    perRunner: limits.perRunner ?? 64,
    global: limits.global,
  })!;
  await proxy.start();
  cleanups.push(() => proxy.stop());
  return { proxy, logs, upstream };
}

/** Open a raw connection and wait until it is connected (or refused at once). */
function connect(target: { path: string } | { port: number }): Promise<{ socket: net.Socket; text: () => string; closed: () => boolean }> {
  return new Promise((resolve, reject) => {
    const socket = 'path' in target ? net.connect(target.path) : net.connect(target.port, '127.0.0.1');
    let text = '';
    let closed = false;
    socket.setEncoding('utf8').on('data', (c: string) => (text += c));
    socket.on('close', () => (closed = true));
    socket.once('error', reject);
    socket.once('connect', () => resolve({ socket, text: () => text, closed: () => closed }));
    cleanups.push(() => void socket.destroy());
  });
}

function request(socket: net.Socket, key: string): void {
  socket.write(`GET /anthropic/v1/models HTTP/1.1\r\nhost: x\r\nx-api-key: ${key}\r\n\r\n`);
}

function placeholderOf(env: NodeJS.ProcessEnv): string {
  return env.ANTHROPIC_API_KEY!;
}

describe('the credential proxy caps its connections', () => {
  it('per runner on its own socket: the excess gets 429 and is closed; the first are served; logged once', async () => {
    const { proxy, logs, upstream } = await setup({ perRunner: 3 });
    const key = placeholderOf(proxy.runnerEnv('s1', {}));
    const socket = proxy.socketPath('s1')!;
    expect(socket).toMatch(/proxy\.sock$/);
    const held = await Promise.all([1, 2, 3].map(() => connect({ path: socket })));
    await waitFor('three held', () => (proxy.connections.held().bySession.s1 === 3 ? true : undefined));
    const extra = await Promise.all([1, 2].map(() => connect({ path: socket })));
    for (const e of extra) await waitFor('the refusal', () => (e.closed() ? true : undefined));
    for (const e of extra) {
      expect(e.text()).toMatch(/^HTTP\/1\.1 429 /);
      expect(e.text()).toContain('this runner holds 3 connections to the proxy, its limit (PINCER_PROXY_RUNNER_CONNECTIONS)');
    }
    expect(logs.filter((l) => l.includes('holds 3 connections, its limit'))).toHaveLength(1);
    // the held ones still work
    request(held[0]!.socket, key);
    await waitFor('the answer', () => (held[0]!.text().includes('{"ok":true}') ? true : undefined));
    expect(upstream).toEqual(['/v1/models']);
    // another session's socket is its own count, and another session's placeholder is refused on this one
    const other = placeholderOf(proxy.runnerEnv('s2', {}));
    const second = await connect({ path: proxy.socketPath('s2')! });
    request(second.socket, key);
    await waitFor('the 403', () => (second.text().includes(' 403 ') ? true : undefined));
    expect(other).not.toBe(key);
    // closing frees the slots
    for (const h of held) h.socket.destroy();
    await waitFor('released', () => (proxy.connections.held().bySession.s1 === undefined ? true : undefined));
    const again = await connect({ path: socket });
    request(again.socket, key);
    await waitFor('served again', () => (again.text().includes('{"ok":true}') ? true : undefined));
    // revoking closes the socket and what it held
    proxy.revoke('s1');
    await waitFor('closed with its runner', () => (again.closed() ? true : undefined));
    expect(proxy.socketPath('s1')).toBeUndefined();
  });

  it('per placeholder on 127.0.0.1: a connection over the runner’s cap gets 429 on its request', async () => {
    const { proxy } = await setup({ perRunner: 2 });
    const key = placeholderOf(proxy.runnerEnv('s1', {}));
    const conns = await Promise.all([1, 2, 3].map(() => connect({ port: proxy.port() })));
    for (const c of conns.slice(0, 2)) {
      request(c.socket, key);
      await waitFor('served', () => (c.text().includes('{"ok":true}') ? true : undefined));
    }
    request(conns[2]!.socket, key);
    await waitFor('refused', () => (conns[2]!.closed() ? true : undefined));
    expect(conns[2]!.text()).toMatch(/^HTTP\/1\.1 429 /);
    expect(conns[2]!.text()).toContain('its limit (PINCER_PROXY_RUNNER_CONNECTIONS)');
  });

  it('in all: past the global cap a connection gets 503 at once, whoever it is; logged once', async () => {
    const { proxy, logs } = await setup({ global: 4 });
    proxy.runnerEnv('s1', {});
    const held = await Promise.all([1, 2, 3, 4].map(() => connect({ path: proxy.socketPath('s1')! })));
    await waitFor('four held', () => (proxy.connections.held().total === 4 ? true : undefined));
    const extra = await Promise.all([connect({ port: proxy.port() }), connect({ path: proxy.socketPath('s1')! })]);
    for (const e of extra) await waitFor('the refusal', () => (e.closed() ? true : undefined));
    for (const e of extra) expect(e.text()).toMatch(/^HTTP\/1\.1 503 [\s\S]*it holds 4 connections, its limit/);
    expect(logs.filter((l) => l.includes('its cap (below the host'))).toHaveLength(1);
    expect(held.every((h) => !h.closed())).toBe(true);
  });

  it('without a setting, the global cap is a quarter of the open-file limit', async () => {
    const { proxy } = await setup({});
    expect(proxy.connections.globalCap()).toBeGreaterThanOrEqual(8);
    expect(proxy.connections.globalCap()).toBeLessThanOrEqual(4096);
  });
});
