import { afterEach, describe, expect, it } from 'vitest';
import { FakeKube } from './support/fake-kube.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * `PINCER_RUNNER=kubernetes` through a real host against the fake cluster (test/support/fake-kube.ts), whose kubelet
 * runs each pod's `pincer session-serve` as a local child on its own loopback address.
 */
let kube: FakeKube | null = null;
afterEach(async () => {
  await stopAllHosts();
  await kube?.close();
  kube = null;
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
    const launch = JSON.parse(Buffer.from(kube.list('secrets')[0]!.data!['launch.json']!, 'base64').toString('utf8')) as { token: string; runners: { env: Record<string, string> } };
    expect(spec).not.toContain(launch.token);
    expect(Object.keys(launch.runners.env).filter((k) => k.startsWith('PINCER_K8S_') || k === 'KUBECONFIG')).toEqual([]);
    expect(host.stderr()).toMatch(new RegExp(`pod pincer-${sessionId}-1, epoch 1, on http://127\\.`));
    expect(await host.stop()).toBe(0);
  });
});
