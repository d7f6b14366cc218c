import fs from 'node:fs';
import { settingsSchema } from '../../shared/settings.js';
import { describeIssues } from '../../db/content.js';

/** The namespace of the host's own pod, when it runs in a cluster (the service account's mount). */
const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/**
 * The settings of `PINCER_RUNNER=kubernetes` (docs/configuration.md "Sessions on Kubernetes"), each read here only,
 * parsed by the registry (src/shared/settings.ts: each one's parser and default).
 */
const KubernetesEnvSchema = settingsSchema([
  'PINCER_K8S_NAMESPACE',
  'PINCER_K8S_IMAGE',
  'PINCER_K8S_IMAGE_PULL_POLICY',
  'PINCER_K8S_IMAGE_PULL_SECRETS',
  'PINCER_K8S_COMMAND',
  'PINCER_K8S_STORAGE_CLASS',
  'PINCER_K8S_STORAGE_SIZE',
  'PINCER_K8S_ACCESS_MODE',
  'PINCER_K8S_SHARED_CLAIM',
  'PINCER_K8S_RUNTIME_CLASS',
  'PINCER_K8S_NODE_SELECTOR',
  'PINCER_K8S_CPU_REQUEST',
  'PINCER_K8S_MEMORY_REQUEST',
  'PINCER_K8S_CPU_LIMIT',
  'PINCER_K8S_MEMORY_LIMIT',
  'PINCER_K8S_RUN_AS_USER',
  'PINCER_K8S_START_TIMEOUT_MS',
  'PINCER_K8S_ENDPOINT_PORT',
  'PINCER_K8S_IDLE_MS',
  'PINCER_K8S_HEARTBEAT_MS',
  'PINCER_K8S_PROXY_URL',
  'PINCER_K8S_PROXY_LISTEN',
  'KUBECONFIG',
  'KUBERNETES_SERVICE_HOST',
]);

/** The names of the settings (the deploy manifests and docs are checked against them). */
export const KUBERNETES_SETTING_NAMES: readonly string[] = Object.keys(KubernetesEnvSchema.shape);

export interface KubernetesSettings {
  /** how the host reaches the API server: KUBECONFIG (its first file), else the in-cluster service account. */
  access: { kubeconfig: string } | { inCluster: true };
  /** where the session objects go: PINCER_K8S_NAMESPACE, else the host pod's own namespace, else the kubeconfig's. */
  namespace: string | undefined;
  image: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  imagePullSecrets: string[];
  command: string;
  storageClass: string | undefined;
  storageSize: string;
  accessMode: 'ReadWriteOnce' | 'ReadWriteOncePod';
  /** a `ReadWriteMany` claim holding `groups/` and `global/`, mounted by subPath (none: empty folders on the session's claim). */
  sharedClaim: string | undefined;
  runtimeClass: string | undefined;
  nodeSelector: Record<string, string>;
  resources: { requests: { cpu: string; memory: string }; limits: { cpu?: string; memory: string } };
  runAsUser: number;
  /** from creating the pod to its endpoint answering (includes attaching the volume). */
  startTimeoutMs: number;
  endpointPort: number;
  /** a pod with nothing open, due or undelivered this long is drained and deleted (its claim kept). */
  idleMs: number;
  /** the pod's health endpoint is asked this often; two misses in a row and the launch is given up (node loss). */
  heartbeatMs: number;
  /** the host's credential proxy as pods reach it (its Service), put in place of the host's loopback address. */
  proxyUrl: string | undefined;
  /** where the credential proxy also listens, for pods (its Service's target); requests there need a live placeholder. */
  proxyListen: { host: string; port: number } | undefined;
}

/** The settings, or an exact error naming the setting (explicit settings fail closed). */
export function loadKubernetesSettings(env: NodeJS.ProcessEnv): KubernetesSettings {
  const parsed = KubernetesEnvSchema.safeParse(env);
  if (!parsed.success) throw new Error(`bad Kubernetes settings: ${describeIssues(parsed.error)}`);
  const e = parsed.data;
  if (!e.PINCER_K8S_IMAGE) throw new Error('PINCER_RUNNER=kubernetes needs PINCER_K8S_IMAGE (the runner image, built by `pincer container image`)');
  const firstKubeconfig = e.KUBECONFIG?.split(':').find(Boolean);
  if (!firstKubeconfig && !e.KUBERNETES_SERVICE_HOST)
    throw new Error('PINCER_RUNNER=kubernetes needs a cluster: set KUBECONFIG, or run the host in a pod (in-cluster service account)');
  if (e.PINCER_K8S_PROXY_LISTEN && !e.PINCER_K8S_PROXY_URL)
    throw new Error('PINCER_K8S_PROXY_LISTEN needs PINCER_K8S_PROXY_URL: the address pods reach that listener by (its Service)');
  return {
    access: firstKubeconfig ? { kubeconfig: firstKubeconfig } : { inCluster: true },
    namespace: e.PINCER_K8S_NAMESPACE ?? inClusterNamespace(),
    image: e.PINCER_K8S_IMAGE,
    imagePullPolicy: e.PINCER_K8S_IMAGE_PULL_POLICY,
    imagePullSecrets: (e.PINCER_K8S_IMAGE_PULL_SECRETS ?? '').split(',').filter(Boolean),
    command: e.PINCER_K8S_COMMAND,
    storageClass: e.PINCER_K8S_STORAGE_CLASS,
    storageSize: e.PINCER_K8S_STORAGE_SIZE,
    accessMode: e.PINCER_K8S_ACCESS_MODE,
    sharedClaim: e.PINCER_K8S_SHARED_CLAIM,
    runtimeClass: e.PINCER_K8S_RUNTIME_CLASS,
    nodeSelector: e.PINCER_K8S_NODE_SELECTOR ?? {},
    resources: {
      requests: { cpu: e.PINCER_K8S_CPU_REQUEST, memory: e.PINCER_K8S_MEMORY_REQUEST },
      limits: { ...(e.PINCER_K8S_CPU_LIMIT ? { cpu: e.PINCER_K8S_CPU_LIMIT } : {}), memory: e.PINCER_K8S_MEMORY_LIMIT },
    },
    runAsUser: e.PINCER_K8S_RUN_AS_USER,
    startTimeoutMs: e.PINCER_K8S_START_TIMEOUT_MS,
    endpointPort: e.PINCER_K8S_ENDPOINT_PORT,
    idleMs: e.PINCER_K8S_IDLE_MS,
    heartbeatMs: e.PINCER_K8S_HEARTBEAT_MS,
    proxyUrl: e.PINCER_K8S_PROXY_URL,
    proxyListen: e.PINCER_K8S_PROXY_LISTEN,
  };
}

function inClusterNamespace(): string | undefined {
  try {
    return fs.readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim() || undefined;
  } catch {
    return undefined; // not in a cluster: the kubeconfig's context names it
  }
}

/** The host settings a pod must never see (they are the host's, or name its cluster access). */
export function isHostOnlyVariable(name: string): boolean {
  return name.startsWith('PINCER_K8S_') || name === 'KUBECONFIG' || name.startsWith('KUBERNETES_');
}
