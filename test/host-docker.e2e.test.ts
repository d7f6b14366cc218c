import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureRunnerImage } from '../src/container/index.js';
import { packageRoot } from '../src/container/config.js';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { dockerCli, dockerdUnavailable, startPrivateDockerd, type PrivateDockerd } from './support/dockerd.js';
import { startFakeAnthropic } from './support/fake-anthropic.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * `pincer host` with PINCER_RUNNER=docker: the host's launch seam takes src/container's Docker launcher. Runners run
 * in real containers on a private dockerd, from the base image `ensureRunnerImage` builds offline from this
 * machine's Node (the app is mounted). Skipped, saying why, where docker.io is not installed or we are not root.
 */
const skip = dockerdUnavailable();
if (skip) console.warn(`[container] skipping host Docker test: ${skip}`);

const IMAGE = 'pincer-runner-test';
let daemon: PrivateDockerd;

describe.skipIf(skip !== undefined)('pincer host with Docker runners', () => {
  beforeAll(async () => {
    daemon = await startPrivateDockerd();
    await ensureRunnerImage({ image: IMAGE, cliEnv: daemon.cliEnv, appRoot: packageRoot(BUILT_CLI) });
  }, 120_000);

  afterAll(async () => {
    await daemon?.stop();
  }, 60_000);

  afterEach(async () => {
    await closeFakeOpenAIs();
    expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
    expect((await dockerCli(['ps', '-a', '--format', '{{.Names}}'], daemon.cliEnv)).trim()).toBe('');
  });

  it('answers through a runner in a container, recovers from the container being killed, and removes it on stop', async () => {
    const host = await startHost({ PINCER_RUNNER: 'docker', PINCER_CONTAINER_IMAGE: IMAGE, DOCKER_HOST: daemon.host, MOCK_DELAY_MS: '1500' });
    const stream = host.stream('boxed');
    const res = await host.request('POST', '/v1/conversations/boxed/messages', { text: 'hello container' });
    const { sessionId, id } = res.body as { sessionId: string; id: string };
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
    const state = await waitFor(
      'batch in flight in the container',
      () => {
        const row = db.prepare('SELECT pid, batch_ids FROM runner_state').get() as { pid: number; batch_ids: string } | undefined;
        return row && JSON.parse(row.batch_ids).includes(id) ? row : undefined;
      },
      { timeoutMs: 20_000 },
    );
    // The runner's pid is a pid inside the container, not the docker client the host started.
    expect(host.runnerPids()).not.toContain(state.pid);
    expect((await dockerCli(['ps', '--format', '{{.Names}}'], daemon.cliEnv)).trim()).toBe(`pincer-runner-${sessionId}`);
    await dockerCli(['kill', `pincer-runner-${sessionId}`], daemon.cliEnv);
    const reply = await stream.waitFor('reply from the next container', (e) => e.event === 'chat', 30_000);
    expect(reply.data.text).toContain('hello container');
    const row = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(id) as InboundRow;
    db.close();
    expect(row).toMatchObject({ status: 'completed', tries: 2 });
    expect(host.stderr()).toMatch(/container pincer-runner-s-/);
    expect(host.stderr()).toMatch(/exited unexpectedly/);
    stream.close();
    expect(await host.stop()).toBe(0);
  }, 120_000);

  it('removes the container of one of its sessions left by an earlier host when it starts', async () => {
    const env = { PINCER_RUNNER: 'docker', PINCER_CONTAINER_IMAGE: IMAGE, DOCKER_HOST: daemon.host };
    const first = await startHost(env);
    const stream = first.stream('leftover');
    const res = await first.request('POST', '/v1/conversations/leftover/messages', { text: 'hello' });
    const { sessionId } = res.body as { sessionId: string };
    await stream.waitFor('the reply', (e) => e.event === 'chat');
    stream.close();
    expect(await first.stop()).toBe(0);
    // a container of that session's name that no host holds, as a host that died could leave
    const name = `pincer-runner-${sessionId}`;
    await dockerCli(
      ['run', '-d', '--name', name, '--label', 'io.pincer.runner=1', '--network', 'none', IMAGE, '/usr/local/bin/node', '-e', 'setInterval(() => {}, 1000)'],
      daemon.cliEnv,
    );
    expect((await dockerCli(['ps', '--format', '{{.Names}}'], daemon.cliEnv)).trim()).toBe(name);
    const second = await startHost(env, first.home);
    expect((await dockerCli(['ps', '-a', '--format', '{{.Names}}'], daemon.cliEnv)).trim()).toBe('');
    expect(await second.stop()).toBe(0);
  }, 120_000);

  it('tells the chat when the memory limit stopped a process of its container', async () => {
    const host = await startHost({
      PINCER_RUNNER: 'docker',
      PINCER_CONTAINER_IMAGE: IMAGE,
      DOCKER_HOST: daemon.host,
      PINCER_CONTAINER_MEMORY: '256m',
      PINCER_STALE_MS: '60000',
    });
    // a task script allocates 512 MiB: the kernel kills it (128 + SIGKILL), the runner goes on
    const script = [
      `node -e 'const a=[];for(let i=0;i<32;i++)a.push(Buffer.alloc(16<<20,1));console.log("allocated")' > memory.txt 2>&1`,
      'echo "exit $?" >> memory.txt',
      `echo '{"wakeAgent":false}'`,
    ].join('\n');
    const task = await host.request('POST', '/v1/conversations/hungry/tasks', { prompt: 'p', processAfter: new Date().toISOString(), script });
    expect(task.status).toBe(202);
    const sessionId = task.body.sessionId as string;
    const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
    const row = await waitFor(
      'the task to end',
      () => {
        const r = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(task.body.id) as InboundRow | undefined;
        return r && (r.status === 'completed' || r.status === 'failed') ? r : undefined;
      },
      { timeoutMs: 60_000 },
    );
    db.close();
    expect(row.status, `${row.last_error ?? ''}\n${host.stderr()}`).toBe('completed');
    const memory = fs.readFileSync(path.join(host.sessionDir(sessionId), 'agent', 'memory.txt'), 'utf8');
    expect(memory).not.toContain('allocated');
    expect(memory).toContain('exit 137');
    // once its container has ended, the chat is told (the container is kept until its end was read, then removed)
    expect((await host.request('POST', `/v1/sessions/${sessionId}/stop`)).status).toBe(200);
    const history = host.stream('hungry', { lastEventId: '0' });
    const notice = await history.waitFor('the memory notice', (e) => e.event === 'notice' && String(e.data.text).includes('ran out of memory'), 30_000);
    history.close();
    expect(notice.data.text).toContain('the 256 MiB limit (PINCER_CONTAINER_MEMORY)');
    expect(host.stderr()).toMatch(/a process of pincer-runner-s-\S+ was killed at its memory limit/);
    expect(await host.stop()).toBe(0);
  }, 120_000);

  // The container has no network: the model server on the host is reached through the host's credential proxy (its
  // socket is mounted in), a keyless local server as well as an API whose real key only the host holds.
  it.each([
    {
      name: 'a local model server without a key',
      async start() {
        const fake = await startFakeOpenAI();
        fake.script({ text: 'Hello from the box.' });
        return {
          env: { PINCER_MODEL: 'local/qwen3:8b', OPENAI_BASE_URL: fake.baseUrl },
          asked: () => fake.modelRequests()[0]?.userTexts.join('\n') ?? '',
          keys: () => [] as string[],
        };
      },
    },
    {
      name: 'the Anthropic API with a key only the host holds',
      async start() {
        const fake = await startFakeAnthropic();
        fake.script({ text: 'Hello from the box.' });
        return {
          env: { PINCER_MODEL: 'anthropic/claude-sonnet-4-5', ANTHROPIC_BASE_URL: fake.url, ANTHROPIC_API_KEY: 'sk-real-docker-key' },
          asked: () => fake.modelRequests()[0]?.lastUserText ?? '',
          keys: () => fake.modelRequests().map((r) => String(r.headers['x-api-key'])),
          close: () => fake.close(),
        };
      },
    },
  ])(
    'answers on the built-in runtime from $name',
    async ({ start }) => {
      const fake: { env: Record<string, string>; asked(): string; keys(): string[]; close?: () => Promise<void> } = await start();
      try {
        const host = await startHost({
          ...fake.env,
          PINCER_RUNNER: 'docker',
          PINCER_CONTAINER_IMAGE: IMAGE,
          DOCKER_HOST: daemon.host,
          AGENT_PROVIDER: 'pincer',
          PINCER_MODEL_MAX_RETRIES: '0',
        });
        const stream = host.stream('model');
        expect((await host.request('POST', '/v1/conversations/model/messages', { text: 'hi from docker' })).status).toBe(202);
        const reply = await stream.waitFor('the model answer', (e) => e.event === 'chat', 60_000);
        expect(reply.data.text).toBe('Hello from the box.');
        expect(fake.asked()).toContain('hi from docker');
        for (const key of fake.keys()) expect(key).toBe('sk-real-docker-key');
        stream.close();
        expect(await host.stop()).toBe(0);
      } finally {
        await fake.close?.();
      }
    },
    120_000,
  );
});
