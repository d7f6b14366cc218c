import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { liveRunners } from '../bench/runner-census.js';
import { ensureRunnerImage } from '../src/container/index.js';
import { packageRoot } from '../src/container/config.js';
import { dockerdUnavailable, onPath, startPrivateDockerd, type PrivateDockerd } from './support/dockerd.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * PINCER_MAX_RUNNERS through a real host: six conversations at once with room for two runners. Every message is
 * answered exactly once, never more than two runner processes are alive (counted from /proc, not from the host's word),
 * the sessions that waited start in the order they began to wait, and the room comes from idle runners stopped to make
 * it (the idle timeout is far away). In each launcher mode this machine has: the cap is the host's, whatever starts
 * the runner.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

const CONVERSATIONS = 6;
const IMAGE = 'pincer-runner-test';
const dockerSkip = dockerdUnavailable();
let daemon: PrivateDockerd | undefined;

const modes: Array<{ kind: string; skip: string | undefined; env: () => Record<string, string> }> = [
  { kind: 'process', skip: undefined, env: () => ({}) },
  { kind: 'bwrap', skip: onPath('bwrap') ? undefined : 'bubblewrap is not installed', env: () => ({}) },
  { kind: 'docker', skip: dockerSkip, env: () => ({ PINCER_CONTAINER_IMAGE: IMAGE, DOCKER_HOST: daemon!.host }) },
];

beforeAll(async () => {
  if (dockerSkip !== undefined) return;
  daemon = await startPrivateDockerd();
  await ensureRunnerImage({ image: IMAGE, cliEnv: daemon.cliEnv, appRoot: packageRoot(BUILT_CLI) });
}, 180_000);

afterAll(async () => {
  await daemon?.stop();
}, 60_000);

describe('a session waiting for room for its runner', () => {
  it('is shown typing while it waits, told once after 10 s that it is queued, and answered once room is made', async () => {
    // room for one runner; each answer takes 20 s: the second conversation waits longer than the notice's 10 s
    const host = await startHost({ PINCER_RUNNER: 'process', PINCER_MAX_RUNNERS: '1', PINCER_IDLE_TIMEOUT_MS: '600000', MOCK_DELAY_MS: '20000' });
    const first = host.stream('first');
    const second = host.stream('second');
    expect((await host.request('POST', '/v1/conversations/first/messages', { text: 'first one' })).status).toBe(202);
    await first.waitFor('typing in the first', (e) => e.event === 'typing' && e.data.active === true, 60_000);
    expect((await host.request('POST', '/v1/conversations/second/messages', { text: 'second one' })).status).toBe(202);
    await waitFor('the second waiting', () => /session \S+ waits for room for its runner: 1 alive/.test(host.stderr()), { timeoutMs: 60_000 });
    await second.waitFor('typing in the waiting conversation', (e) => e.event === 'typing' && e.data.active === true, 60_000);
    expect(first.events.some((e) => e.event === 'chat')).toBe(false); // shown while it waits, not once its runner works
    const notice = await second.waitFor('the notice that it is queued', (e) => String(e.data.text ?? '').includes('your message is queued'), 60_000);
    // told while it waited: before the first answer made room
    expect(second.events.some((e) => String(e.data.text ?? '').includes('second one'))).toBe(false);
    await first.waitFor('the first answer', (e) => e.event === 'chat' && String(e.data.text).includes('first one'), 60_000);
    await second.waitFor('the second answer', (e) => e.event === 'chat' && String(e.data.text).includes('second one'), 90_000);
    const told = second.events.filter((e) => String(e.data.text ?? '').includes('your message is queued'));
    expect(told).toEqual([notice]); // once
    expect(first.events.some((e) => String(e.data.text ?? '').includes('your message is queued'))).toBe(false);
    first.close();
    second.close();
    expect(await host.stop()).toBe(0);
  }, 240_000);
});

describe.each(modes)('runners alive at once (PINCER_MAX_RUNNERS, $kind)', ({ kind, skip, env }) => {
  it.skipIf(skip !== undefined)(
    'six conversations with room for two: all answered once, at most two runners alive, the waiting ones in order',
    async () => {
      const host = await startHost({ PINCER_RUNNER: kind, ...env(), PINCER_MAX_RUNNERS: '2', PINCER_IDLE_TIMEOUT_MS: '600000', MOCK_DELAY_MS: '300' });
      const names = Array.from({ length: CONVERSATIONS }, (_, i) => `cap-${i}`);
      const streams = names.map((name) => host.stream(name));
      let most = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const alive = [...liveRunners(host.home).values()].reduce((n, pids) => n + pids.length, 0);
          most = Math.max(most, alive);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const sent = await Promise.all(
        names.map(async (name) => {
          const res = await host.request('POST', `/v1/conversations/${name}/messages`, { text: `hello from ${name}`, sender: 'U', senderId: 'u1' });
          expect(res.status).toBe(202);
          return res.body as { sessionId: string };
        }),
      );
      await Promise.all(
        streams.map((stream, i) =>
          stream.waitFor(`the answer in ${names[i]}`, (e) => e.event === 'chat' && String(e.data.text).includes(`hello from ${names[i]}`), 180_000),
        ),
      );
      // nothing more comes: a second answer would show in the stream's mailbox
      for (const [i, name] of names.entries()) {
        const events = await host.request('GET', `/v1/conversations/${name}/events?after=0`);
        const chats = (events.body.events as { event?: string; type?: string; data?: { text?: string } }[]).filter((e) =>
          JSON.stringify(e).includes(`hello from ${names[i]}`),
        );
        expect(chats).toHaveLength(1);
      }
      sampling = false;
      await sampler;
      expect(most).toBeGreaterThan(0);
      expect(most).toBeLessThanOrEqual(2);

      const log = host.stderr();
      const waited = [...log.matchAll(/session (\S+) waits for room for its runner/g)].map((m) => m[1]!);
      const started = [...log.matchAll(/runner started for (\S+):/g)].map((m) => m[1]!);
      expect(new Set(started)).toEqual(new Set(sent.map((s) => s.sessionId)));
      expect(started).toHaveLength(CONVERSATIONS); // one runner each: none crashed or started twice
      expect(waited.length).toBeGreaterThanOrEqual(CONVERSATIONS - 2);
      // the ones that waited started in the order they began to wait
      expect(started.filter((id) => waited.includes(id))).toEqual(waited);
      // room was made by stopping idle runners, not by their idle timeout
      expect(log.match(/idle; stopping it to make room/g)?.length ?? 0).toBeGreaterThanOrEqual(CONVERSATIONS - 2);
      for (const stream of streams) stream.close();
      expect(await host.stop()).toBe(0);
    },
    300_000,
  );
});
