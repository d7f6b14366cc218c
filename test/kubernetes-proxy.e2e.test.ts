import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeKube } from './support/fake-kube.js';
import { closeFakeOpenAIs, startFakeOpenAI } from './support/fake-openai.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { answers, kubeEnv, send } from './support/kube-host.js';
import { descendants, environOf } from './support/processes.js';
import { waitFor } from './support/wait.js';

/**
 * The credential proxy for session pods: the host listens for them on PINCER_K8S_PROXY_LISTEN, and the pods' base
 * URLs name PINCER_K8S_PROXY_URL (here a TCP relay standing in for the Service). Through a real host, the built-in
 * runtime in the pod and a scripted model server: the model call succeeds with the real key added by the host, and the
 * real key is in no Secret, pod spec, process environment, command line or file of the pod.
 */
let kube: FakeKube | null = null;
const relays: net.Server[] = [];
afterEach(async () => {
  await stopAllHosts();
  await kube?.close();
  kube = null;
  for (const relay of relays.splice(0)) await new Promise((resolve) => relay.close(resolve));
  await closeFakeOpenAIs();
});

/** A TCP relay on loopback (the Service in front of the host's listener), counting the connections it forwards. */
async function startRelay(): Promise<{ url: string; connections: () => number; target: (port: number) => void }> {
  let target = 0;
  let count = 0;
  const server = net.createServer((client) => {
    count += 1;
    const upstream = net.connect(target, '127.0.0.1');
    client.pipe(upstream).pipe(client);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  relays.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}`, connections: () => count, target: (p) => (target = p) };
}

/** Regular files under `dir` that contain `needle`. */
function filesContaining(dir: string, needle: string): string[] {
  const found: string[] = [];
  const walk = (d: string): void => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const full = path.join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) {
        try {
          if (fs.readFileSync(full).includes(needle)) found.push(full);
        } catch {
          // vanished (a temp file)
        }
      }
    }
  };
  walk(dir);
  return found;
}

function cmdlineOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return ''; // gone
  }
}

describe('the credential proxy for session pods', { timeout: 120_000 }, () => {
  it('pods call the model through PINCER_K8S_PROXY_URL; the real key never reaches a pod', async () => {
    const realKey = `sk-real-${randomBytes(16).toString('hex')}`;
    const model = await startFakeOpenAI();
    model.setDefault({ text: 'Answered through the relay.' });
    kube = await FakeKube.start();
    const relay = await startRelay();
    const host = await startHost(
      kubeEnv(kube, {
        AGENT_PROVIDER: 'pincer',
        PINCER_MODEL: 'openai/gpt-5',
        OPENAI_BASE_URL: model.baseUrl,
        OPENAI_API_KEY: realKey,
        PINCER_K8S_PROXY_LISTEN: '127.0.0.1:0',
        PINCER_K8S_PROXY_URL: `${relay.url}/`,
      }),
    );
    const listener = Number(/credential proxy for session pods on 127\.0\.0\.1:(\d+) \(placeholders only\)/.exec(host.stderr())?.[1]);
    expect(listener).toBeGreaterThan(0);
    relay.target(listener);

    const { sessionId } = await send(host, 'p', 'hello through the relay');
    await answers(host, 'p', 'Answered through the relay.');
    // The model server got the real key, from the host; the pod's call came through the relay.
    expect(model.modelRequests().length).toBeGreaterThan(0);
    for (const request of model.modelRequests()) expect(request.headers.authorization).toBe(`Bearer ${realKey}`);
    expect(relay.connections()).toBeGreaterThan(0);

    // What the pod was given: a placeholder and the relay's address, not the key.
    const name = `pincer-${sessionId}-1`;
    const secret = kube.list('secrets').find((s) => s.metadata.name === name)!;
    const launch = Buffer.from(secret.data!['launch.json']!, 'base64').toString('utf8');
    expect(launch).not.toContain(realKey);
    const runnerEnv = (JSON.parse(launch) as { runners: { env: Record<string, string> } }).runners.env;
    expect(runnerEnv.OPENAI_API_KEY).toMatch(/^pincer-placeholder-/);
    expect(runnerEnv.OPENAI_BASE_URL).toBe(`${relay.url}/openai`);
    expect(runnerEnv.PINCER_UPSTREAM_OPENAI_BASE_URL).toBe(model.baseUrl); // the upstream as it is, not rewritten
    expect(JSON.stringify(kube.pod(name))).not.toContain(realKey);
    const serve = kube.podPid(name)!;
    for (const pid of [serve, ...descendants(serve)]) {
      expect([pid, environOf(pid).includes(realKey), cmdlineOf(pid).includes(realKey)]).toEqual([pid, false, false]);
    }
    expect(descendants(serve).some((pid) => environOf(pid).includes(runnerEnv.OPENAI_API_KEY!))).toBe(true); // the runner was looked at
    expect(filesContaining(kube.root, realKey)).toEqual([]);

    // The listener for pods serves live placeholders only, even to a request that names no key.
    const call = (key?: string): Promise<number> =>
      fetch(`http://127.0.0.1:${listener}/openai/responses`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: '{}',
      }).then(async (res) => (await res.arrayBuffer(), res.status));
    expect(await call()).toBe(401);
    expect(await call('pincer-placeholder-made-up')).toBe(401);
    // A lost pod's placeholder is revoked with it (as a drained one's is).
    kube.killPod(name);
    await waitFor('the pod given up', () => host.stderr().includes(`pod ${name} (epoch 1) lost`), { timeoutMs: 60_000 });
    await waitFor('its placeholder refused', async () => (await call(runnerEnv.OPENAI_API_KEY)) === 401, { timeoutMs: 30_000 });
    expect(host.stderr()).not.toContain(realKey);
    expect(await host.stop()).toBe(0);
  });
});
