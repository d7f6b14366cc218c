import { loadAllYaml } from '@kubernetes/client-node';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildClaim, buildPod, buildSecret, claimName, launchName, launchSelector, nameOf } from '../src/host/kubernetes/manifests.js';
import { isHostOnlyVariable, KUBERNETES_SETTING_NAMES, loadKubernetesSettings } from '../src/host/kubernetes/settings.js';

/** The session objects of `PINCER_RUNNER=kubernetes` as plain data, from the settings. */
const BASE = { PINCER_K8S_IMAGE: 'registry.example/pincer:1', KUBECONFIG: '/tmp/kubeconfig' };
const SESSION = { sessionId: 's-0123abcd-4567', groupFolder: 'main' };

describe('Kubernetes settings', () => {
  it('need an image and a cluster, and name the setting that is wrong', () => {
    expect(() => loadKubernetesSettings({ KUBECONFIG: '/k' })).toThrow(/needs PINCER_K8S_IMAGE/);
    expect(() => loadKubernetesSettings({ PINCER_K8S_IMAGE: 'i' })).toThrow(/needs a cluster: set KUBECONFIG/);
    expect(() => loadKubernetesSettings({ ...BASE, PINCER_K8S_MEMORY_LIMIT: 'lots' })).toThrow(/PINCER_K8S_MEMORY_LIMIT.*Kubernetes quantity/);
    expect(() => loadKubernetesSettings({ ...BASE, PINCER_K8S_ACCESS_MODE: 'ReadWriteMany' })).toThrow(/PINCER_K8S_ACCESS_MODE/);
    expect(() => loadKubernetesSettings({ ...BASE, PINCER_K8S_NODE_SELECTOR: 'no-equals' })).toThrow(/PINCER_K8S_NODE_SELECTOR.*key=value/);
    expect(() => loadKubernetesSettings({ ...BASE, PINCER_K8S_PROXY_LISTEN: '8788' })).toThrow(/PINCER_K8S_PROXY_LISTEN.*host:port/);
    expect(() => loadKubernetesSettings({ ...BASE, PINCER_K8S_PROXY_LISTEN: '0.0.0.0:8788' })).toThrow(/needs PINCER_K8S_PROXY_URL/);
    expect(loadKubernetesSettings({ ...BASE, PINCER_K8S_PROXY_LISTEN: '0.0.0.0:8788', PINCER_K8S_PROXY_URL: 'http://h:8788' }).proxyListen).toEqual({
      host: '0.0.0.0',
      port: 8788,
    });
    expect(loadKubernetesSettings({ PINCER_K8S_IMAGE: 'i', KUBERNETES_SERVICE_HOST: '10.0.0.1' }).access).toEqual({ inCluster: true });
    expect(loadKubernetesSettings({ ...BASE, KUBECONFIG: '/a:/b' }).access).toEqual({ kubeconfig: '/a' });
  });

  it('keep the cluster access and their own names out of what a pod sees', () => {
    expect(['KUBECONFIG', 'PINCER_K8S_IMAGE', 'KUBERNETES_SERVICE_HOST'].filter(isHostOnlyVariable)).toHaveLength(3);
    expect(['PATH', 'ANTHROPIC_BASE_URL', 'PINCER_IDLE_TIMEOUT_MS'].filter(isHostOnlyVariable)).toEqual([]);
  });
});

describe('session objects', () => {
  const settings = loadKubernetesSettings({
    ...BASE,
    PINCER_K8S_CPU_REQUEST: '250m',
    PINCER_K8S_MEMORY_REQUEST: '300Mi',
    PINCER_K8S_CPU_LIMIT: '2',
    PINCER_K8S_MEMORY_LIMIT: '2Gi',
    PINCER_K8S_STORAGE_CLASS: 'fast-ssd',
    PINCER_K8S_STORAGE_SIZE: '5Gi',
    PINCER_K8S_ACCESS_MODE: 'ReadWriteOncePod',
    PINCER_K8S_NODE_SELECTOR: 'pool=agents,zone=a',
    PINCER_K8S_IMAGE_PULL_SECRETS: 'regcred',
    PINCER_K8S_RUNTIME_CLASS: 'gvisor',
  });

  it('names fit DNS-1123 and carry the session and the epoch', () => {
    expect(nameOf('S_Odd/Id!')).toBe('s-odd-id');
    expect(claimName(SESSION.sessionId)).toBe('pincer-s-0123abcd-4567');
    expect(launchName(SESSION.sessionId, 7)).toBe('pincer-s-0123abcd-4567-7');
    expect(launchSelector(SESSION.sessionId)).toBe(
      'app.kubernetes.io/managed-by=pincer,app.kubernetes.io/component=session-launch,pincer.dev/session=s-0123abcd-4567',
    );
  });

  it('the claim: storage from the settings, labelled, and no owner (it outlives every launch)', () => {
    const claim = buildClaim(settings, SESSION);
    expect(claim.spec).toEqual({ accessModes: ['ReadWriteOncePod'], resources: { requests: { storage: '5Gi' } }, storageClassName: 'fast-ssd' });
    expect(claim.metadata!.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'pincer', 'pincer.dev/session': SESSION.sessionId });
    expect(claim.metadata!.ownerReferences).toBeUndefined();
  });

  it('the pod: non-root, no capabilities, RuntimeDefault seccomp, no token, 30 s tolerations, resources from the settings', () => {
    const pod = buildPod(settings, SESSION, 3, 3000);
    const spec = pod.spec!;
    const container = spec.containers[0]!;
    expect(pod.metadata!.labels).toEqual({
      'app.kubernetes.io/managed-by': 'pincer',
      'app.kubernetes.io/component': 'session-launch',
      'pincer.dev/session': SESSION.sessionId,
      'pincer.dev/epoch': '3',
    });
    expect(spec.restartPolicy).toBe('Never');
    expect(spec.automountServiceAccountToken).toBe(false);
    expect(spec.enableServiceLinks).toBe(false);
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, privileged: false });
    expect(container.resources).toEqual({ requests: { cpu: '250m', memory: '300Mi' }, limits: { cpu: '2', memory: '2Gi' } });
    expect(spec.tolerations!.map((t) => [t.key, t.effect, t.tolerationSeconds])).toEqual([
      ['node.kubernetes.io/not-ready', 'NoExecute', 30],
      ['node.kubernetes.io/unreachable', 'NoExecute', 30],
    ]);
    expect(spec.nodeSelector).toEqual({ pool: 'agents', zone: 'a' });
    expect(spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(spec.runtimeClassName).toBe('gvisor');
    expect(spec.terminationGracePeriodSeconds).toBe(8);
    expect(container.readinessProbe!.httpGet).toEqual({ path: '/v1/health', port: 7070 });
    expect(container.command).toEqual(['pincer']);
    expect(container.args!.slice(0, 6)).toEqual([
      'session-serve',
      '/workspace/session',
      '--launch-file',
      '/etc/pincer/launch/launch.json',
      '--listen',
      '$(POD_IP):7070',
    ]);
    expect(spec.volumes).toEqual([
      { name: 'session', persistentVolumeClaim: { claimName: 'pincer-s-0123abcd-4567' } },
      { name: 'launch', secret: { secretName: 'pincer-s-0123abcd-4567-3', defaultMode: 0o400 } },
    ]);
  });

  it('the shared claim, when there is one, mounts the group’s folder (at the session folder’s group/) and global/ read-only by subPath', () => {
    const shared = loadKubernetesSettings({ ...BASE, PINCER_K8S_SHARED_CLAIM: 'pincer-shared' });
    const pod = buildPod(shared, SESSION, 1, 3000);
    expect(pod.spec!.containers[0]!.volumeMounts).toContainEqual({
      name: 'shared',
      mountPath: '/workspace/session/group',
      subPath: 'groups/main',
      readOnly: true,
    });
    expect(pod.spec!.containers[0]!.volumeMounts).toContainEqual({ name: 'shared', mountPath: '/workspace/session/global', subPath: 'global', readOnly: true });
    expect(pod.spec!.volumes).toContainEqual({ name: 'shared', persistentVolumeClaim: { claimName: 'pincer-shared' } });
  });

  it('the launch Secret holds the document; the pod spec names it but holds nothing of it', () => {
    const secret = buildSecret(SESSION, 2, { token: 'bearer-xyz-0123456789' });
    expect(secret.stringData).toEqual({ 'launch.json': '{"token":"bearer-xyz-0123456789"}' });
    expect(JSON.stringify(buildPod(settings, SESSION, 2, 3000))).not.toContain('bearer-xyz');
  });
});

describe('deploy/kubernetes', () => {
  const dir = path.join(import.meta.dirname, '..', 'deploy', 'kubernetes');
  const objects = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap(
      (f) =>
        loadAllYaml(fs.readFileSync(path.join(dir, f), 'utf8')) as {
          kind: string;
          metadata: { name: string; labels?: Record<string, string> };
          [k: string]: unknown;
        }[],
    );
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);

  it('the kustomization lists every file, and every object is labelled as pincer’s', () => {
    const kustomization = loadAllYaml(fs.readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8'))[0] as { resources: string[] };
    expect(kustomization.resources.sort()).toEqual(
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
        .sort(),
    );
    for (const o of objects) expect(o.metadata.labels?.['app.kubernetes.io/managed-by'], `${o.kind} ${o.metadata.name}`).toBe('pincer');
  });

  it('the host runs PINCER_RUNNER=kubernetes with settings the code knows, as the Role’s service account', () => {
    const [host] = byKind('StatefulSet') as unknown as {
      spec: { replicas: number; template: { spec: { serviceAccountName: string; containers: { env: { name: string; value: string }[] }[] } } };
    }[];
    expect(host!.spec.replicas).toBe(1);
    const env = host!.spec.template.spec.containers[0]!.env;
    expect(env).toContainEqual({ name: 'PINCER_RUNNER', value: 'kubernetes' });
    const unknown = env.map((e) => e.name).filter((n) => n.startsWith('PINCER_K8S_') && !KUBERNETES_SETTING_NAMES.includes(n));
    expect(unknown).toEqual([]);
    const endpoint = env.find((e) => e.name === 'PINCER_K8S_ENDPOINT_PORT')!.value;
    expect(Number(endpoint)).toBe(loadKubernetesSettings(BASE).endpointPort);
    const binding = byKind('RoleBinding')[0] as unknown as { subjects: { name: string }[]; roleRef: { name: string } };
    expect(binding.subjects[0]!.name).toBe(host!.spec.template.spec.serviceAccountName);
    expect(binding.roleRef.name).toBe(byKind('Role')[0]!.metadata.name);
  });

  it('the NetworkPolicy selects the session pods by the labels the code puts on them, on the endpoint port', () => {
    const policy = byKind('NetworkPolicy')[0] as unknown as {
      spec: { podSelector: { matchLabels: Record<string, string> }; ingress: { ports: { port: number }[] }[] };
    };
    const pod = buildPod(loadKubernetesSettings(BASE), SESSION, 1, 3000);
    expect(pod.metadata!.labels).toMatchObject(policy.spec.podSelector.matchLabels);
    expect(policy.spec.ingress[0]!.ports[0]!.port).toBe(pod.spec!.containers[0]!.ports![0]!.containerPort);
  });

  it('the credential proxy: the host listens where its Service sends the proxy port, pods are told the Service, and may reach only that port of the host', () => {
    const [host] = byKind('StatefulSet') as unknown as {
      spec: { template: { spec: { containers: { env: { name: string; value: string }[]; ports: { name: string; containerPort: number }[] }[] } } };
    }[];
    const container = host!.spec.template.spec.containers[0]!;
    const value = (name: string): string => container.env.find((e) => e.name === name)!.value;
    const settings = loadKubernetesSettings({
      ...BASE,
      PINCER_K8S_PROXY_LISTEN: value('PINCER_K8S_PROXY_LISTEN'),
      PINCER_K8S_PROXY_URL: value('PINCER_K8S_PROXY_URL'),
    });
    const proxyPort = container.ports.find((p) => p.name === 'proxy')!.containerPort;
    expect(settings.proxyListen).toEqual({ host: '0.0.0.0', port: proxyPort });
    const service = byKind('Service')[0] as unknown as {
      metadata: { name: string; namespace: string };
      spec: { ports: { name: string; port: number; targetPort: string }[] };
    };
    const servicePort = service.spec.ports.find((p) => p.targetPort === 'proxy')!;
    expect(new URL(settings.proxyUrl!).host).toBe(`${service.metadata.name}.${service.metadata.namespace}.svc:${servicePort.port}`);
    const policy = byKind('NetworkPolicy')[0] as unknown as {
      spec: { egress: { to: { podSelector?: { matchLabels: Record<string, string> } }[]; ports?: { port: number }[] }[] };
    };
    const toHost = policy.spec.egress.find((e) => e.to.some((t) => t.podSelector?.matchLabels['app.kubernetes.io/name'] === 'pincer-host'))!;
    expect(toHost.ports).toEqual([{ port: proxyPort }]);
  });
});
