import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionCluster } from '../src/host/kubernetes/cluster.js';
import { startLaunch, type LaunchContext } from '../src/host/kubernetes/launch.js';
import { labelsOf } from '../src/host/kubernetes/manifests.js';
import { loadKubernetesSettings } from '../src/host/kubernetes/settings.js';
import type { LaunchDocument } from '../src/host/session/serve-protocol.js';
import { createLogger } from '../src/shared/log.js';
import { FAKE_TOKEN, FakeKube, NAMESPACE } from './support/fake-kube.js';
import { waitFor } from './support/wait.js';

/**
 * The host's pod watch (src/host/kubernetes/pod-watch.ts, the client's ListWatch) against the fake API server's watch
 * streams: a launch learns readiness from it (no `get pods` polling), hears a pod fail, resumes a dropped stream from
 * its last resourceVersion without listing again, and lists again after a 410.
 */
let kube: FakeKube | null = null;
let cluster: SessionCluster | null = null;
const lines: string[] = [];
const log = createLogger('test', (line) => lines.push(line));

afterEach(async () => {
  await cluster?.close();
  cluster = null;
  await kube?.close();
  kube = null;
  lines.length = 0;
});

async function connect(env: Record<string, string> = {}): Promise<{ kube: FakeKube; cluster: SessionCluster; env: Record<string, string> }> {
  kube = await FakeKube.start();
  const all = { KUBECONFIG: kube.writeKubeconfig(), PINCER_K8S_IMAGE: 'pincer:test', PINCER_K8S_START_TIMEOUT_MS: '60000', ...env };
  cluster = await SessionCluster.connect(loadKubernetesSettings(all), log);
  return { kube, cluster, env: all };
}

/** A pod whose one process serves the readiness path on its own address (no pincer needed for the watch's tests). */
function servingPod(name: string): V1Pod {
  const script = `require('http').createServer((q, r) => r.end('ok')).listen(7070, process.env.POD_IP)`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: labelsOf('s-watch', 'launch', 1) },
    spec: {
      restartPolicy: 'Never',
      containers: [
        {
          name: 'session',
          image: 'pincer:test',
          command: [process.execPath, '-e', script],
          env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
          readinessProbe: { httpGet: { path: '/v1/health', port: 7070 } },
        },
      ],
    },
  };
}

/** Every state the watch told of one pod, in order. */
function follow(c: SessionCluster, name: string): string[] {
  const seen: string[] = [];
  c.pods.on(name, (pod) => {
    if (!pod) return void seen.push('deleted');
    const ready = (pod.status?.conditions ?? []).some((x) => x.type === 'Ready' && x.status === 'True');
    seen.push(`${pod.status?.phase ?? 'none'}${ready ? '+ready' : ''}`);
  });
  return seen;
}

const count = (k: FakeKube, verb: string): number => k.calls.filter((c) => c.verb === verb && c.resource === 'pods').length;

function launchContext(c: SessionCluster, env: Record<string, string>): LaunchContext {
  return {
    cluster: c,
    settings: loadKubernetesSettings(env),
    session: { sessionId: 's-watch', groupFolder: 'main' },
    stopGraceMs: 1000,
    filesDir: '/nonexistent',
    log,
    onPodEvent: () => undefined,
  };
}

function launchDocument(): LaunchDocument {
  return {
    sessionId: 's-watch',
    epoch: 1,
    token: 'test-token-0123456789abcdef',
    listen: '0.0.0.0:7070',
    orphanMs: 60_000,
    sweep: {},
    runners: { kind: 'process', env: {} },
    launch: { groupDir: '/workspace/session/group', globalDir: '/workspace/session/global', logFile: '/workspace/logs/runner.log' },
  } as unknown as LaunchDocument;
}

describe('the pod watch', () => {
  it('a launch learns that its pod is ready from the watch, never by reading the pod again', async () => {
    const { kube: k, cluster: c, env } = await connect();
    const launch = await startLaunch(launchContext(c, env), 1, launchDocument());
    expect(launch.url).toMatch(/^http:\/\/127\.\d+\.\d+\.\d+:7070$/);
    expect(count(k, 'watch')).toBeGreaterThanOrEqual(1);
    expect(k.calls.filter((x) => x.verb === 'get' && x.resource === 'pods')).toEqual([]);
    await launch.port.close();
  });

  it('a pod that fails is heard of as Failed; a launch whose pod exits before serving says so with its log', async () => {
    const { kube: k, cluster: c, env } = await connect();
    const seen = follow(c, 'watched-1');
    await c.createPod(servingPod('watched-1'));
    await waitFor('ready', () => seen.includes('Running+ready'));
    k.killPod('watched-1');
    await waitFor('failed', () => seen.includes('Failed'));
    expect(seen.indexOf('Running+ready')).toBeLessThan(seen.indexOf('Failed'));

    // `false` in place of pincer: it exits 1 at once.
    await expect(startLaunch(launchContext(c, { ...env, PINCER_K8S_COMMAND: 'false' }), 1, launchDocument())).rejects.toThrow(
      /pod pincer-s-watch-1 exited \(1\) before it served/,
    );
    await waitFor('the failed launch cleaned up', () => k.list('pods').length === 1 && k.list('secrets').length === 0);
  });

  it('a stream that drops is resumed from the last resourceVersion seen, without listing again', async () => {
    const { kube: k, cluster: c } = await connect();
    const seen = follow(c, 'watched-2');
    await c.createPod(servingPod('watched-2'));
    await waitFor('ready', () => seen.includes('Running+ready'));
    expect(count(k, 'list')).toBe(1);
    const before = k.watchesFrom.length;
    k.dropWatches();
    await waitFor('watching again', () => k.openWatches === 1 && k.watchesFrom.length > before);
    const resumedFrom = Number(k.watchesFrom.at(-1));
    expect(resumedFrom).toBeGreaterThan(Number(k.watchesFrom[0]));
    k.killPod('watched-2');
    await waitFor('failed, heard through the resumed stream', () => seen.includes('Failed'));
    expect(count(k, 'list')).toBe(1);
  });

  it('a watch that fails is tried again with back-off; from a version too old (410) it lists again and hears what went meanwhile', async () => {
    const { kube: k, cluster: c } = await connect();
    const seen = follow(c, 'watched-3');
    await c.createPod(servingPod('watched-3'));
    await waitFor('ready', () => seen.includes('Running+ready'));
    // The API server refuses watches for a while; the pod is deleted and the history compacted meanwhile.
    k.fail('watch', 'pods', 503, 1000);
    k.dropWatches();
    await waitFor('a refused watch', () => k.calls.filter((x) => x.verb === 'watch').length >= 3);
    await c.deletePod('watched-3', 0);
    await waitFor('the pod gone', () => k.list('pods').length === 0);
    k.compact();
    k.clearFailures();
    await waitFor('deleted, heard through the new list', () => seen.includes('deleted'), { timeoutMs: 30_000 });
    expect(count(k, 'list')).toBe(2);
    expect(lines.some((l) => /pod watch failed \(1 in a row\).*watching again from resourceVersion \d+ in \d+ ms/.test(l))).toBe(true);
  });

  it('serves BOOKMARKs to a watch that asks for them', async () => {
    const { kube: k } = await connect();
    const res = await fetch(`${k.url}/api/v1/namespaces/${NAMESPACE}/pods?watch=1&allowWatchBookmarks=true&resourceVersion=1`, {
      headers: { authorization: `Bearer ${FAKE_TOKEN}` },
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    await waitFor('the stream registered', () => k.openWatches === 1);
    k.bookmark();
    const { value } = await reader.read();
    const event = JSON.parse(Buffer.from(value!).toString('utf8').split('\n')[0]!) as { type: string; object: { metadata: { resourceVersion: string } } };
    expect(event.type).toBe('BOOKMARK');
    expect(Number(event.object.metadata.resourceVersion)).toBeGreaterThan(0);
    await reader.cancel();
  });
});
