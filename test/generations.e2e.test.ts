import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SecretsStore } from '../src/host/secrets.js';
import { startFakeAnthropic, type FakeAnthropic } from './support/fake-anthropic.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { BUILT_CLI, runCli } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Model-runtime generations through a real host (`pincer host --http 0`, real runners on the built-in runtime, a fake
 * Anthropic server on 127.0.0.1): the published catalogue over HTTP and `pincer models`, a key rotated with
 * `pincer secret set` while a turn is open (the open turn finishes on the old key, the next turn's request carries the
 * new one, no restart of host or runner), and a secrets file made unusable keeping the last good generation serving.
 */
const fakes: FakeAnthropic[] = [];
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
  await Promise.all(fakes.splice(0).map((fake) => fake.close()));
});

const MODEL = 'anthropic/claude-sonnet-4-5';

async function pincerHost(home: string, fake: FakeAnthropic): Promise<HostHandle> {
  return startHost(
    { AGENT_PROVIDER: 'pincer', PINCER_MODEL: MODEL, ANTHROPIC_BASE_URL: fake.url, PINCER_MODEL_MAX_RETRIES: '0', PINCER_IDLE_TIMEOUT_MS: '120000' },
    home,
  );
}

function setSecret(home: string, name: string, value: string): void {
  const result = spawnSync(process.execPath, [BUILT_CLI, 'secret', 'set', name], {
    env: { PATH: process.env.PATH, PINCER_HOME: home },
    input: `${value}\n`,
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(result.status, result.stderr).toBe(0);
}

async function generationOf(host: HostHandle): Promise<Record<string, unknown>> {
  const res = await host.request('GET', '/v1/groups/main/models');
  expect(res.status).toBe(200);
  return res.body;
}

describe('model-runtime generations in a running host', { timeout: 180_000 }, () => {
  it('a key rotated during a turn: the open turn ends on the old key, the next turn uses the new one, nothing restarts', async () => {
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
    const host = await pincerHost(home, fake);

    const first = await generationOf(host);
    expect(first).toMatchObject({ group: 'main', generation: 1, stale: false, model: MODEL, credentials: [{ name: 'ANTHROPIC_API_KEY', source: 'secrets' }] });
    expect(first.models).toEqual(
      expect.arrayContaining([expect.objectContaining({ ref: MODEL, configured: true, available: true, harness: 'pincer', viaProxy: true })]),
    );

    const stream = host.stream('c');
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'first' })).status).toBe(202);
    await waitFor('the first model request, held open', () => fake.modelRequests().length === 1 || undefined, { timeoutMs: 60_000 });

    setSecret(home, 'ANTHROPIC_API_KEY', newKey);
    await waitFor('generation 2 published', async () => ((await generationOf(host)).generation === 2 ? true : undefined), { timeoutMs: 30_000 });
    release();
    await stream.waitFor('the first turn ends', (e) => e.event === 'chat' && e.data.text === 'first turn done', 60_000);
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'second' })).status).toBe(202);
    await stream.waitFor('the second turn ends', (e) => e.event === 'chat' && e.data.text === 'second turn done', 60_000);
    stream.close();

    // turn 1: both its requests on the old key (the second one went after the rotation); turn 2: the new key
    expect(fake.modelRequests().map((r) => r.headers['x-api-key'])).toEqual([oldKey, oldKey, newKey]);
    expect(host.runnerPids()).toHaveLength(1);
    // each turn's usage row names the generation it ran with: the open turn 1, the next one 2 (same runner)
    const [session] = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string }[];
    const sessionDb = new Database(path.join(home, 'sessions', session!.id, 'session.db'), { readonly: true });
    try {
      expect(sessionDb.prepare('SELECT model_generation FROM turn_usage ORDER BY id').all()).toEqual([{ model_generation: 1 }, { model_generation: 2 }]);
    } finally {
      sessionDb.close();
    }
    expect(host.stderr()).toMatch(/model runtime: credentials changed \(the secrets store changed\)/);
    expect(host.stderr()).toMatch(/model runtime: agent group main generation 2 /);
    const listed = await runCli(['models', '--json'], { PATH: process.env.PATH, PINCER_HOME: home });
    expect(listed.status, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ groups: [{ group: 'main', generation: 2 }] });
    expect(await host.stop()).toBe(0);
    for (const text of [
      host.stderr(),
      listed.stdout,
      JSON.stringify(first),
      fs.readFileSync(path.join(home, 'catalogue', `${String(first.groupId)}.json`), 'utf8'),
    ]) {
      expect(text).not.toContain(oldKey);
      expect(text).not.toContain(newKey);
    }
  });

  it('a secrets file made unusable keeps the last good generation serving and says why; GET /v1/models is scoped', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-host-'));
    const fake = await startFakeAnthropic();
    fakes.push(fake);
    fake.script({ text: 'answered on the kept key' });
    new SecretsStore(home).set('ANTHROPIC_API_KEY', 'sk-ant-kept');
    const host = await pincerHost(home, fake);
    expect((await generationOf(host)).generation).toBe(1);

    fs.chmodSync(path.join(home, 'secrets.json'), 0o644);
    await waitFor('the refusal reported', async () => ((await generationOf(host)).lastFailure ? true : undefined), { timeoutMs: 30_000 });
    const view = await generationOf(host);
    expect(view).toMatchObject({ generation: 1, lastFailure: { error: expect.stringMatching(/secrets file .* has mode 0644; it must be 0600/) } });
    expect(host.stderr()).toMatch(/model runtime: secrets file .* has mode 0644.*\(credentials 1 keep serving\)/);

    const stream = host.stream('c');
    expect((await host.request('POST', '/v1/conversations/c/messages', { text: 'hi' })).status).toBe(202);
    await stream.waitFor('the answer', (e) => e.event === 'chat' && e.data.text === 'answered on the kept key', 60_000);
    stream.close();
    expect(fake.modelRequests().map((r) => r.headers['x-api-key'])).toEqual(['sk-ant-kept']);

    // a token of another conversation sees no group; the admin sees main
    const created = await runCli(['token', 'create', 'bridge', '--conversation', 'elsewhere', '--home', home]);
    expect(created.status, created.stderr).toBe(0);
    const scoped = await host.request('GET', '/v1/models', undefined, { token: created.stdout.trim() });
    expect(scoped).toMatchObject({ status: 200, body: { groups: [] } });
    expect((await host.request('GET', '/v1/groups/main/models', undefined, { token: created.stdout.trim() })).status).toBe(404);
    const admin = await host.request('GET', '/v1/models');
    expect((admin.body.groups as { group: string }[]).map((g) => g.group)).toEqual(['main']);
    expect(JSON.stringify(admin.body)).not.toContain('sk-ant-kept');
    expect(await host.stop()).toBe(0);
  });

  it('a group whose model runtime cannot be built starts no runner: its message waits, the chat is told, nothing is lost', async () => {
    const host = await startHost({ AGENT_PROVIDER: 'no-such-provider' });
    const view = await generationOf(host);
    expect(view).toMatchObject({ generation: null, lastFailure: { error: expect.stringMatching(/^agent group main: unknown provider "no-such-provider"/) } });
    const stream = host.stream('held');
    expect((await host.request('POST', '/v1/conversations/held/messages', { text: 'anyone there?' })).status).toBe(202);
    const notice = await stream.waitFor('the hold notice', (e) => e.event === 'notice', 60_000);
    expect(notice.data.text).toMatch(
      /^The agent cannot start yet: agent group main has no model runtime yet: agent group main: unknown provider "no-such-provider".*Your messages wait/,
    );
    stream.close();
    expect(host.runnerPids()).toEqual([]);
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { pending: number }[];
    expect(sessions.map((s) => s.pending)).toEqual([1]);
    expect(host.stderr()).toMatch(/runner start held \(1 in a row\)/);
    expect(host.stderr().match(/error: model runtime: agent group main: unknown provider/g)).toHaveLength(1);
    // the web page's Models view is served
    expect((await fetch(`http://127.0.0.1:${host.port}/web/models.js`)).status).toBe(200);
    expect(await host.stop()).toBe(0);
  });
});
