import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeServer, listenOnLoopback } from './support/fake-http.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { descendants, environOf } from './support/processes.js';
import { waitFor } from './support/wait.js';

/**
 * A runner behind the credential proxy is told the real upstream of each proxied base URL (to pick its wire API), but
 * never credentials the host's base URL may carry (`OPENAI_BASE_URL=http://user:password@…`): through a real host and
 * the built-in runtime on a keyless server, no process under the host and no runner log holds the password. And the
 * proxy forwards only below the base URL's path: `/openai/../api/delete` does not reach the server's other endpoints.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await closeFakeOpenAIs();
});

describe('the upstream a runner is told', { timeout: 120_000 }, () => {
  it('leaves out the user and password of the base URL', async () => {
    const secret = `pw-${process.pid}-${Date.now()}`;
    const fake = await startFakeOpenAI();
    fake.script({ text: 'Hello through the proxy.' });
    const withCredentials = fake.baseUrl.replace('http://', `http://llm:${secret}@`);
    const host = await startHost({
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: withCredentials,
      PINCER_IDLE_TIMEOUT_MS: '60000',
    });
    const stream = host.stream('c');
    const res = await host.request('POST', '/v1/conversations/c/messages', { text: 'hi' });
    expect(res.status).toBe(202);
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'Hello through the proxy.', 60_000);
    stream.close();

    expect(fake.modelRequests().length).toBeGreaterThan(0);
    // The runner knows where the proxy leads, without them.
    const runner = descendants(host.child.pid!)
      .map(environOf)
      .find((env) => env.includes('PINCER_CREDENTIAL_PROXY=1'));
    expect(runner).toBeDefined();
    expect(runner).toContain(`PINCER_UPSTREAM_OPENAI_BASE_URL=${fake.baseUrl}\0`);
    for (const pid of descendants(host.child.pid!)) expect([pid, environOf(pid).includes(secret)]).toEqual([pid, false]);
    const logs = path.join(host.home, 'logs');
    await waitFor('the runner log', () => fs.readdirSync(logs).length > 0 || undefined);
    for (const log of fs.readdirSync(logs)) expect(fs.readFileSync(path.join(logs, log), 'utf8')).not.toContain(secret);
    expect(host.stderr()).not.toContain(secret);
    expect(await host.stop()).toBe(0);
  });
});

describe('where the proxy forwards', { timeout: 60_000 }, () => {
  it('only below the base URL: a path that climbs out of it is refused and never reaches the server', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      res.end('{}');
    });
    const base = await listenOnLoopback(server);
    try {
      const host = await startHost({ OPENAI_BASE_URL: `${base}/v1` });
      const port = Number(/credential proxy on 127\.0\.0\.1:(\d+)/.exec(host.stderr())?.[1]);
      // raw paths, as a client in the sandbox can send them (fetch would resolve the dots itself)
      const get = (rawPath: string): Promise<number> =>
        new Promise((resolve, reject) => {
          http.get({ host: '127.0.0.1', port, path: rawPath }, (res) => resolve(res.resume().statusCode ?? 0)).on('error', reject);
        });
      expect(await get('/openai/models')).toBe(200);
      for (const climbing of ['/openai/../api/delete', '/openai/%2e%2e/api/delete', '/openai/v1/../../api/delete', '/openai/..']) {
        expect([climbing, await get(climbing)]).toEqual([climbing, 400]);
      }
      expect(seen).toEqual(['/v1/models']);
      expect(await host.stop()).toBe(0);
    } finally {
      await closeServer(server);
    }
  });
});
