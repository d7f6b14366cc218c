import { afterEach, describe, expect, it } from 'vitest';
import { startHost, stopAllHosts, TEST_TOKEN } from './support/host-harness.js';

/**
 * The HTTP API attacked from a browser and a script, on a real host: a DNS-rebinding page (its own name resolving to
 * 127.0.0.1, so its requests are "same origin" and come from loopback) and a token guesser at /v1/login.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('the Host header (DNS rebinding)', { timeout: 60_000 }, () => {
  it('answers IP literals, localhost and the configured names; another name gets 421, /metrics and /v1/login included', async () => {
    const host = await startHost({ PINCER_HTTP_HOSTNAMES: 'pincer.example.org' });
    const rebound = { host: `attacker.example:${host.port}`, origin: `http://attacker.example:${host.port}` };
    const metrics = await host.request('GET', '/metrics', undefined, { token: null, headers: rebound });
    expect(metrics.status).toBe(421);
    expect(String(metrics.body.error)).toContain('does not answer to the host name "attacker.example"');
    const login = await host.request('POST', '/v1/login', { token: TEST_TOKEN }, { token: null, headers: rebound });
    expect(login.status).toBe(421);
    expect((await host.request('GET', '/v1/sessions', undefined, { headers: { host: 'attacker.example' } })).status).toBe(421);
    // the ordinary ways in still work
    for (const name of [`127.0.0.1:${host.port}`, `localhost:${host.port}`, `[::1]:${host.port}`, 'pincer.example.org', 'PINCER.example.org.']) {
      expect([name, (await host.request('GET', '/metrics', undefined, { token: null, headers: { host: name } })).status]).toEqual([name, 200]);
    }
    expect(await host.stop()).toBe(0);
  });
});

describe('/v1/login', { timeout: 60_000 }, () => {
  it('refuses a client after 5 wrong tokens in a minute, the right token too, with Retry-After', async () => {
    const host = await startHost();
    for (let i = 0; i < 5; i++) expect((await host.request('POST', '/v1/login', { token: `guess-${i}-0123456789abcdef` }, { token: null })).status).toBe(401);
    const locked = await fetch(`http://127.0.0.1:${host.port}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: TEST_TOKEN }),
    });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await locked.json()) as { error: string }).error).toMatch(/too many failed logins/);
    // a bearer token still works: the lock is on logins only
    expect((await host.request('GET', '/v1/sessions')).status).toBe(200);
    expect(await host.stop()).toBe(0);
  });
});
