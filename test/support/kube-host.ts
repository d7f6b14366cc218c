import { expect } from 'vitest';
import type { FakeKube } from './fake-kube.js';
import type { HostHandle } from './host-harness.js';
import { waitFor } from './wait.js';

/** What the Kubernetes e2e tests ask of a real host on the fake cluster (test/support/fake-kube.ts). */
export interface ConversationEvent {
  type: string;
  text?: string;
}

export async function events(host: HostHandle, conversation: string): Promise<ConversationEvent[]> {
  return (await host.request('GET', `/v1/conversations/${conversation}/events?after=0`)).body.events as ConversationEvent[];
}

/** Wait for `count` chat answers containing `marker`. */
export function answers(host: HostHandle, conversation: string, marker: string, count = 1, timeoutMs = 60_000): Promise<ConversationEvent[]> {
  return waitFor(
    `${count} answer(s) with "${marker}"`,
    async () => {
      const found = (await events(host, conversation)).filter((e) => e.type === 'chat' && e.text?.includes(marker));
      return found.length >= count ? found : undefined;
    },
    { timeoutMs, intervalMs: 50 },
  );
}

/** Wait for a notice (not a chat answer) matching `pattern`. */
export function notice(host: HostHandle, conversation: string, pattern: RegExp, timeoutMs = 60_000): Promise<ConversationEvent> {
  return waitFor(`a notice matching ${pattern}`, async () => (await events(host, conversation)).find((e) => e.type !== 'chat' && pattern.test(e.text ?? '')), {
    timeoutMs,
  });
}

export async function send(host: HostHandle, conversation: string, text: string): Promise<{ sessionId: string; id: string }> {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text });
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string };
}

/** A host's settings for the fake cluster: short heartbeats, a roomy start timeout. */
export function kubeEnv(fake: FakeKube, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PINCER_RUNNER: 'kubernetes',
    KUBECONFIG: fake.writeKubeconfig(),
    PINCER_K8S_IMAGE: 'pincer:test',
    PINCER_K8S_HEARTBEAT_MS: '300',
    PINCER_K8S_START_TIMEOUT_MS: '30000',
    ...extra,
  };
}
