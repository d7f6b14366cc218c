import { loadAllYaml } from '@kubernetes/client-node';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeKube } from './support/fake-kube.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * `PINCER_RUNNER=kubernetes` through a real host against the fake cluster (test/support/fake-kube.ts), whose kubelet
 * runs each pod's `pincer session-serve` as a local child on its own loopback address.
 */
let kube: FakeKube | null = null;
/** every (verb, resource) the host asked of the fake clusters in this file. */
const called = new Set<string>();
let finished = 0;
afterEach(async () => {
  await stopAllHosts();
  for (const call of kube?.calls ?? []) called.add(`${call.verb} ${call.resource}`);
  await kube?.close();
  kube = null;
  finished += 1;
});

/** The shipped Role grants exactly what the code used here (checked when the whole file ran). */
afterAll(() => {
  const role = loadAllYaml(fs.readFileSync(path.join(import.meta.dirname, '..', 'deploy', 'kubernetes', 'role.yaml'), 'utf8'))[0] as {
    rules: { resources: string[]; verbs: string[] }[];
  };
  const granted = new Set(role.rules.flatMap((r) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}`))));
  expect([...called].filter((c) => !granted.has(c))).toEqual([]);
  if (finished === TESTS) expect([...granted].filter((g) => !called.has(g)).sort()).toEqual([]);
});

interface Event {
  type: string;
  text?: string;
}

async function events(host: HostHandle, conversation: string): Promise<Event[]> {
  return (await host.request('GET', `/v1/conversations/${conversation}/events?after=0`)).body.events as Event[];
}

function answers(host: HostHandle, conversation: string, marker: string, count = 1, timeoutMs = 60_000): Promise<Event[]> {
  return waitFor(
    `${count} answer(s) with "${marker}"`,
    async () => {
      const found = (await events(host, conversation)).filter((e) => e.type === 'chat' && e.text?.includes(marker));
      return found.length >= count ? found : undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
}

async function send(host: HostHandle, conversation: string, text: string): Promise<{ sessionId: string; id: string }> {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text });
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string };
}

function env(fake: FakeKube, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PINCER_RUNNER: 'kubernetes',
    KUBECONFIG: fake.writeKubeconfig(),
    PINCER_K8S_IMAGE: 'pincer:test',
    PINCER_K8S_HEARTBEAT_MS: '300',
    PINCER_K8S_START_TIMEOUT_MS: '30000',
    ...extra,
  };
}

/** how many tests this file has (the Role is compared both ways only when all of them ran). */
const TESTS = 12;

const livePods = (fake: FakeKube) => fake.list('pods').filter((p) => !p.metadata.deletionTimestamp);

describe('sessions on Kubernetes (fake cluster)', () => {
  it('answers a message through a pod on the session’s own claim, each once', async () => {
    kube = await FakeKube.start();
    const host = await startHost(env(kube));
    const { sessionId } = await send(host, 'c1', 'first question');
    await answers(host, 'c1', 'first question');
    await send(host, 'c1', 'second');
    await answers(host, 'c1', 'second');
    const chats = (await events(host, 'c1')).filter((e) => e.type === 'chat');
    expect(chats.filter((e) => e.text?.includes('first question'))).toHaveLength(1);
    const [pod] = livePods(kube);
    expect(pod!.metadata.name).toBe(`pincer-${sessionId}-1`);
    expect(pod!.metadata.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'pincer', 'pincer.dev/session': sessionId, 'pincer.dev/epoch': '1' });
    expect(kube.list('persistentvolumeclaims').map((c) => c.metadata.name)).toEqual([`pincer-${sessionId}`]);
    expect(kube.list('secrets').map((s) => s.metadata.name)).toEqual([`pincer-${sessionId}-1`]);
    // Nothing secret in the pod spec: the bearer is only in the Secret.
    const spec = JSON.stringify(pod!.spec);
    const launch = JSON.parse(Buffer.from(kube.list('secrets')[0]!.data!['launch.json']!, 'base64').toString('utf8')) as {
      token: string;
      runners: { env: Record<string, string> };
    };
    expect(spec).not.toContain(launch.token);
    expect(Object.keys(launch.runners.env).filter((k) => k.startsWith('PINCER_K8S_') || k === 'KUBECONFIG')).toEqual([]);
    expect(host.stderr()).toMatch(new RegExp(`pod pincer-${sessionId}-1, epoch 1, on http://127\\.`));
    expect(await host.stop()).toBe(0);
  });

  it('idle → the pod is drained and deleted, the claim kept; the next message starts a new pod on the same claim', async () => {
    kube = await FakeKube.start();
    const host = await startHost(env(kube, { PINCER_K8S_IDLE_MS: '2000' }));
    const { sessionId } = await send(host, 'idle', 'before sleep');
    await answers(host, 'idle', 'before sleep');
    await waitFor('the pod drained', () => /drained and deleted \(idle for \d+ ms\); claim kept/.test(host.stderr()), { timeoutMs: 30_000 });
    await waitFor('the pod gone', () => kube!.list('pods').length === 0, { timeoutMs: 30_000 });
    expect(kube.list('persistentvolumeclaims').map((c) => c.metadata.name)).toEqual([`pincer-${sessionId}`]);
    expect(kube.list('secrets')).toEqual([]);
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string }[];
    expect(sessions.map((s) => s.id)).toEqual([sessionId]);

    await send(host, 'idle', 'after waking');
    await answers(host, 'idle', 'after waking');
    // (not the live pods now: on a slow machine the new one may be idle and drained again already)
    expect(host.stderr()).toMatch(new RegExp(`pod pincer-${sessionId}-2, epoch 2, on http://`));
    expect(kube.list('persistentvolumeclaims')).toHaveLength(1);
    // The same database: the first message is there, answered once.
    const chats = (await events(host, 'idle')).filter((e) => e.type === 'chat');
    expect(chats.filter((e) => e.text?.includes('before sleep'))).toHaveLength(1);
    expect(chats.filter((e) => e.text?.includes('after waking'))).toHaveLength(1);
    expect(await host.stop()).toBe(0);
  });

  it('a task falling due wakes a drained session with no traffic: a new pod runs it', async () => {
    kube = await FakeKube.start();
    const host = await startHost(env(kube, { PINCER_K8S_IDLE_MS: '1000' }));
    const { sessionId } = await send(host, 't', 'hello');
    await answers(host, 't', 'hello');
    const due = new Date(Date.now() + 8000).toISOString();
    expect((await host.request('POST', '/v1/conversations/t/tasks', { prompt: 'wake me later', processAfter: due })).status).toBe(202);
    await waitFor('the pod drained', () => new RegExp(`drained and deleted .*next due ${due.slice(0, 16)}`).test(host.stderr()), { timeoutMs: 30_000 });
    await answers(host, 't', 'wake me later', 1, 60_000);
    expect(host.stderr()).toMatch(/something falls due at .*; starting its pod/);
    expect(kube.list('pods').map((p) => p.metadata.name)).toContain(`pincer-${sessionId}-2`);
    expect(await host.stop()).toBe(0);
  });

  it('a pod killed under a running host: a new launch with a new epoch; what was sent meanwhile is answered, each once', async () => {
    kube = await FakeKube.start();
    const host = await startHost(env(kube));
    const { sessionId } = await send(host, 'k', 'before');
    await answers(host, 'k', 'before');
    kube.killPod(`pincer-${sessionId}-1`);
    for (let i = 0; i < 4; i++) await send(host, 'k', `after-${i}`);
    await answers(host, 'k', 'after-3');
    await waitFor('epoch 2', () => new RegExp(`pod pincer-${sessionId}-2, epoch 2`).test(host.stderr()), { timeoutMs: 30_000 });
    const chats = (await events(host, 'k')).filter((e) => e.type === 'chat');
    for (let i = 0; i < 4; i++) expect(chats.filter((e) => e.text?.includes(`after-${i}<`) || e.text?.endsWith(`after-${i}`))).toHaveLength(1);
    expect(chats.filter((e) => e.text?.includes('before'))).toHaveLength(1);
    expect(await host.stop()).toBe(0);
  });

  it('node down: the pod is deleted with grace 0, the new launch waits for the volume (Multi-Attach), then answers; nothing lost', async () => {
    kube = await FakeKube.start({ forceDetachMs: 4000 });
    const host = await startHost(env(kube));
    const { sessionId } = await send(host, 'n', 'before');
    await answers(host, 'n', 'before');
    const first = `pincer-${sessionId}-1`;
    kube.nodeDown(kube.nodeOf(first)!);
    await send(host, 'n', 'during the outage');
    await answers(host, 'n', 'during the outage', 1, 90_000);
    expect(host.stderr()).toMatch(new RegExp(`pod ${first} \\(epoch 1\\) lost`));
    expect(host.stderr()).toMatch(/FailedAttachVolume: Multi-Attach error/);
    const notices = (await events(host, 'n')).filter((e) => e.type !== 'chat').map((e) => e.text ?? '');
    expect(notices.some((t) => /waiting for its volume/.test(t))).toBe(true);
    const chats = (await events(host, 'n')).filter((e) => e.type === 'chat');
    expect(chats.filter((e) => e.text?.includes('during the outage'))).toHaveLength(1);
    expect(chats.filter((e) => e.text?.includes('before'))).toHaveLength(1);
    // The new launch (on the other node) could not start before the volume was force-detached from the lost one.
    const second = `pincer-${sessionId}-2`;
    expect(kube.nodeOf(second)).not.toBe(kube.nodeOf(first));
    expect(kube.timeline.indexOf(`force-detached ${first}`)).toBeGreaterThan(-1);
    expect(kube.timeline.indexOf(`force-detached ${first}`)).toBeLessThan(kube.timeline.indexOf(`started ${second}`));
    expect(await host.stop()).toBe(0);
  });

  it('a pod that never becomes ready: given up after the start timeout with a notice, its pod and Secret deleted; a later launch answers', async () => {
    kube = await FakeKube.start();
    kube.holdReadiness(true);
    const host = await startHost(env(kube, { PINCER_K8S_START_TIMEOUT_MS: '3000', PINCER_RUNNER_BACKOFF_MAX_MS: '1000' }));
    const { sessionId } = await send(host, 'slow', 'kept while it starts');
    const first = `pincer-${sessionId}-1`;
    const told = await waitFor('a notice', async () => (await events(host, 'slow')).find((e) => e.type !== 'chat' && /did not serve/.test(e.text ?? '')), {
      timeoutMs: 60_000,
    });
    // At the first timeout (the chat waited that long already), naming the setting and what the pod was doing.
    expect(told.text).toMatch(
      new RegExp(
        `could not be started on Kubernetes \\(1 failure\\(s\\) in a row: pod ${first} did not serve within 3000 ms \\(PINCER_K8S_START_TIMEOUT_MS; last: (Pending|Running, not ready)\\)\\); retrying with back-off\\. Messages sent meanwhile are kept\\.`,
      ),
    );
    await waitFor('its pod and Secret deleted', () => !kube!.pod(first) && !kube!.list('secrets').some((s) => s.metadata.name === first), {
      timeoutMs: 30_000,
    });
    expect(host.stderr()).toMatch(new RegExp(`pod could not be started \\(1 in a row, next try in \\d+ ms\\): pod ${first} did not serve within 3000 ms`));
    kube.holdReadiness(false);
    await answers(host, 'slow', 'kept while it starts', 1, 90_000);
    expect((await events(host, 'slow')).filter((e) => e.type === 'chat' && e.text?.includes('kept while it starts'))).toHaveLength(1);
    expect(await host.stop()).toBe(0);
  });

  it.each([
    ['500s', 500, /failed to create pod .*\(500: /],
    ['403', 403, /refused to create pod .*\(403: .*deploy\/kubernetes\/role\.yaml/],
  ])('API server %s on pod creation: a clear notice, the message kept and answered once the cluster lets it', async (_name, code, pattern) => {
    kube = await FakeKube.start();
    const host = await startHost(env(kube, { PINCER_RUNNER_BACKOFF_MAX_MS: '1000' }));
    kube.fail('create', 'pods', code, 3);
    await send(host, 'e', 'kept through errors');
    const notice = await waitFor('a notice', async () => (await events(host, 'e')).find((e) => e.type !== 'chat' && pattern.test(e.text ?? '')), {
      timeoutMs: 60_000,
    });
    expect(notice.text).toMatch(/could not be started on Kubernetes/);
    await answers(host, 'e', 'kept through errors');
    expect((await events(host, 'e')).filter((e) => e.type === 'chat' && e.text?.includes('kept through errors'))).toHaveLength(1);
    expect(await host.stop()).toBe(0);
  });

  it('an API server that does not answer: a notice naming it, the message kept', async () => {
    kube = await FakeKube.start();
    const host = await startHost({ ...env(kube), KUBECONFIG: kube.writeKubeconfig('http://127.0.0.1:9') });
    await send(host, 'u', 'nobody home');
    const notice = await waitFor('a notice', async () => (await events(host, 'u')).find((e) => e.type !== 'chat' && /did not answer/.test(e.text ?? '')), {
      timeoutMs: 60_000,
    });
    expect(notice.text).toMatch(/the Kubernetes API server http:\/\/127\.0\.0\.1:9 did not answer/);
    const status = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string }[];
    expect(status).toHaveLength(1);
    expect(await host.stop()).toBe(0);
  });

  it('an image that cannot be pulled: one clear notice, and no pod left behind', async () => {
    kube = await FakeKube.start({ badImages: ['pincer:missing'] });
    const host = await startHost(env(kube, { PINCER_K8S_IMAGE: 'pincer:missing' }));
    await send(host, 'img', 'hello');
    const notice = await waitFor('a notice', async () => (await events(host, 'img')).find((e) => e.type !== 'chat' && /ErrImagePull/.test(e.text ?? '')), {
      timeoutMs: 60_000,
    });
    expect(notice.text).toMatch(/check PINCER_K8S_IMAGE=pincer:missing/);
    await waitFor('the failed pod deleted', () => kube!.list('pods').length === 0, { timeoutMs: 20_000 });
    expect((await events(host, 'img')).filter((e) => /ErrImagePull/.test(e.text ?? ''))).toHaveLength(1);
    expect(await host.stop()).toBe(0);
  });

  it('a pod that exits before it serves: the notice quotes the end of its log', async () => {
    kube = await FakeKube.start();
    // `echo` instead of `pincer`: it prints its arguments and exits 0 without serving.
    const host = await startHost(env(kube, { PINCER_K8S_COMMAND: 'echo', PINCER_RUNNER_BACKOFF_MAX_MS: '500' }));
    await send(host, 'x', 'hello');
    const notice = await waitFor('a notice', async () => (await events(host, 'x')).find((e) => e.type !== 'chat' && /before it served/.test(e.text ?? '')), {
      timeoutMs: 60_000,
    });
    expect(notice.text).toMatch(/exited \(0\) before it served: session-serve \S+ --launch-file/);
    expect(await host.stop()).toBe(0);
  });

  it('a restarted host adopts the running pod instead of starting a second launch', async () => {
    kube = await FakeKube.start();
    const first = await startHost(env(kube));
    const { sessionId } = await send(first, 'a', 'one');
    await answers(first, 'a', 'one');
    expect(await first.stop()).toBe(0);
    expect(livePods(kube).map((p) => p.metadata.name)).toEqual([`pincer-${sessionId}-1`]);
    const second = await startHost(env(kube), first.home);
    await send(second, 'a', 'two');
    await answers(second, 'a', 'two');
    expect(second.stderr()).toMatch(new RegExp(`adopted pod pincer-${sessionId}-1 \\(epoch 1\\)`));
    expect(kube.list('pods').map((p) => p.metadata.name)).toEqual([`pincer-${sessionId}-1`]);
    expect(await second.stop()).toBe(0);
  });
});
