import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretsStore } from '../src/host/secrets.js';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * A key rotated while a served session runs (`PINCER_RUNNER=session-serve`: each session in its own
 * `pincer session-serve` process, its runner a plain process there, a fake Anthropic server on 127.0.0.1). The host
 * cannot see a remote runner's turn, so each proxied request of a served session takes the group's newest published
 * generation: the model call after `pincer secret set` carries the new key — inside the turn that was open, and in
 * the next — with no restart of host, serve process or runner; the next turn records generation 2.
 */
const fakes: FakeAnthropic[] = [];
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

function setSecret(home: string, name: string, value: string): void {
  const result = spawnSync(process.execPath, [BUILT_CLI, 'secret', 'set', name], {
    env: { PATH: process.env.PATH, PINCER_HOME: home },
    input: `${value}\n`,
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(result.status, result.stderr).toBe(0);
}

async function generationOf(host: HostHandle): Promise<unknown> {
  const res = await host.request('GET', '/v1/groups/main/models');
  expect(res.status).toBe(200);
  return res.body.generation;
}

describe('model-runtime generations in a served session', { timeout: 180_000 }, () => {
  it('a key rotated while a served session runs is used by its next model call, with no restart', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    const oldKey = `sk-ant-old-${process.pid}-${Date.now()}`;
    const newKey = `sk-ant-new-${process.pid}-${Date.now()}`;
    const fake = await startFakeAnthropic();
    fakes.push(fake);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    fake.script(
      { until: released, then: { toolUse: { name: 'mcp__pincer__send_message', input: { text: 'still working' } } } },
      { text: 'first turn done' },
      { text: 'second turn done' },
    );
    new SecretsStore(home).set('ANTHROPIC_API_KEY', oldKey);
    const host = await startHost(
      {
        PINCER_RUNNER: 'session-serve',
        PINCER_SESSION_SERVE_RUNNER: 'process',
        AGENT_PROVIDER: 'pincer',
        PINCER_MODEL: 'anthropic/claude-sonnet-4-5',
        ANTHROPIC_BASE_URL: fake.url,
        PINCER_MODEL_MAX_RETRIES: '0',
        PINCER_IDLE_TIMEOUT_MS: '120000',
      },
      home,
    );
    expect(await generationOf(host)).toBe(1);

    const stream = host.stream('c');
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'first' })).status).toBe(202);
    await waitFor('the first model request, held open', () => fake.modelRequests().length === 1 || undefined, { timeoutMs: 90_000 });

    setSecret(home, 'ANTHROPIC_API_KEY', newKey);
    await waitFor('generation 2 published', async () => ((await generationOf(host)) === 2 ? true : undefined), { timeoutMs: 30_000 });
    release();
    await stream.waitFor('the first turn ends', (e) => e.event === 'chat' && e.data.text === 'first turn done', 60_000);
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'second' })).status).toBe(202);
    await stream.waitFor('the second turn ends', (e) => e.event === 'chat' && e.data.text === 'second turn done', 60_000);
    stream.close();

    // the call open at the rotation went on the old key; every call after it on the new one
    expect(fake.modelRequests().map((r) => r.headers['x-api-key'])).toEqual([oldKey, newKey, newKey]);

    const [session] = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string }[];
    const runnerLog = fs.readFileSync(path.join(home, 'logs', `${session!.id}.log`), 'utf8');
    // one runner, started once, with generation 1: nothing restarted
    expect([...runnerLog.matchAll(/\[runner\] ready: .*model runtime generation (\d+)/g)].map((m) => m[1])).toEqual(['1']);
    // served, by one session-serve process all along
    expect([...host.stderr().matchAll(/session \S+: session-serve pid (\d+)/g)]).toHaveLength(1);
    const sessionDb = new Database(path.join(home, 'sessions', session!.id, 'session.db'), { readonly: true });
    try {
      expect(sessionDb.prepare('SELECT model_generation FROM turn_usage ORDER BY id').all()).toEqual([{ model_generation: 1 }, { model_generation: 2 }]);
    } finally {
      sessionDb.close();
    }
    expect(await host.stop()).toBe(0);
    for (const text of [host.stderr(), runnerLog]) {
      expect(text).not.toContain(oldKey);
      expect(text).not.toContain(newKey);
    }
  });
});
