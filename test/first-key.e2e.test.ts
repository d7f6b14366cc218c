import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * A host started with no provider key at all (`pincer host --http 0`, real runners, a fake Anthropic server on
 * 127.0.0.1): its credential proxy runs all the same, so the first key, set the documented way (`pincer secret set`),
 * answers the message that waited for it — through the proxy, with no restart of the host.
 */
const fakes: FakeAnthropic[] = [];
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

describe('the first key of a host started without one', { timeout: 180_000 }, () => {
  it('is used by the next runner start through the proxy, without a restart', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    const key = `sk-ant-first-${process.pid}-${Date.now()}`;
    const fake = await startFakeAnthropic();
    fakes.push(fake);
    fake.script({ text: 'answered with the first key' });
    const host = await startHost(
      // a long crash back-off: the start after the key is set must not wait for it
      {
        AGENT_PROVIDER: 'pincer',
        PINCER_MODEL: 'anthropic/claude-sonnet-4-5',
        ANTHROPIC_BASE_URL: fake.url,
        PINCER_MODEL_MAX_RETRIES: '0',
        PINCER_RUNNER_BACKOFF_MS: '600000',
        PINCER_RUNNER_BACKOFF_MAX_MS: '600000',
      },
      home,
    );
    expect(host.stderr()).toMatch(/credential proxy on 127\.0\.0\.1:\d+ \(no key yet/);
    const stream = host.stream('c');
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'hi' })).status).toBe(202);
    await waitFor('a runner that exits for want of a key', () => /exited unexpectedly \(2\); crash 1 in a row/.test(host.stderr()) || undefined, {
      timeoutMs: 60_000,
    });

    const set = spawnSync(process.execPath, [BUILT_CLI, 'secret', 'set', 'ANTHROPIC_API_KEY'], {
      env: { PATH: process.env.PATH, PINCER_HOME: home },
      input: `${key}\n`,
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(set.status, set.stderr).toBe(0);
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'answered with the first key', 90_000);
    stream.close();
    expect(fake.modelRequests().map((r) => r.headers['x-api-key'])).toEqual([key]);
    expect(host.stderr()).toMatch(/model runtime: agent group main generation 2 /);
    expect(host.stderr()).not.toMatch(/ready: home .*\n[^]*ready: home /); // one start of the host
    expect(await host.stop()).toBe(0);
    expect(host.stderr()).not.toContain(key);
  });
});
