import type { CoreV1Api, CoreV1Event, KubeConfig, V1PersistentVolumeClaim, V1Pod, V1Secret } from '@kubernetes/client-node';
import { errorMessage, type Logger } from '../../shared/log.js';
import { COMPONENT_LABEL, MANAGED_BY } from './manifests.js';
import { PodWatch } from './pod-watch.js';
import type { KubernetesSettings } from './settings.js';
import { PincerError } from '../../shared/errors.js';

/**
 * The few Kubernetes calls a session needs (exactly what deploy/kubernetes/role.yaml grants), through the official
 * client, each failure turned into a `KubernetesError` whose message says what was refused and what to do.
 */
/** Kept as a subclass: launches branch on the API's answer (`reason`) and on whether retrying can help. */
export class KubernetesError extends PincerError {
  constructor(
    /** `forbidden` (RBAC), `unauthorized`, `not-found`, `conflict`, `invalid` (422), `server` (5xx), `unreachable`. */
    readonly reason: 'forbidden' | 'unauthorized' | 'not-found' | 'conflict' | 'invalid' | 'server' | 'unreachable',
    message: string,
    options?: ErrorOptions,
  ) {
    super(reason === 'invalid' ? 'invalid-input' : reason === 'server' || reason === 'unreachable' ? 'unavailable' : reason, message, {
      cause: options?.cause,
    });
    this.name = 'KubernetesError';
  }

  /** Trying again will not help until someone changes the cluster or the settings. */
  get permanent(): boolean {
    return this.reason === 'forbidden' || this.reason === 'unauthorized' || this.reason === 'invalid';
  }
}

export function isKubernetesError(err: unknown, code?: KubernetesError['code']): err is KubernetesError {
  return err instanceof KubernetesError && (code === undefined || err.reason === code);
}

export class SessionCluster {
  private constructor(
    private readonly api: CoreV1Api,
    readonly namespace: string,
    /** the API server, for messages. */
    readonly server: string,
    /** the host's one watch on its session pods (readiness, failure, deletion), started on first use. */
    readonly pods: PodWatch,
  ) {}

  /** The client loads only here, on first use of `PINCER_RUNNER=kubernetes` (it is large, and other hosts never need it). */
  static async connect(settings: KubernetesSettings, log: Logger): Promise<SessionCluster> {
    const k8s = await import('@kubernetes/client-node');
    const kc: KubeConfig = new k8s.KubeConfig();
    if ('kubeconfig' in settings.access) kc.loadFromFile(settings.access.kubeconfig);
    else kc.loadFromCluster();
    const context = kc.getContextObject(kc.getCurrentContext());
    const namespace = settings.namespace ?? context?.namespace ?? 'default';
    const api = kc.makeApiClient(k8s.CoreV1Api);
    const pods = PodWatch.create(k8s, kc, api, namespace, `${MANAGED_BY.key}=${MANAGED_BY.value},${COMPONENT_LABEL}=session-launch`, log);
    return new SessionCluster(api, namespace, kc.getCurrentCluster()?.server ?? '(no server)', pods);
  }

  /** Stop watching (the host stops). */
  async close(): Promise<void> {
    await this.pods.close();
  }

  /** Create the session's claim unless it exists (a claim is never replaced: it holds the session). */
  async ensureClaim(claim: V1PersistentVolumeClaim): Promise<'created' | 'exists'> {
    try {
      await this.api.createNamespacedPersistentVolumeClaim({ namespace: this.namespace, body: claim });
      return 'created';
    } catch (err) {
      const translated = this.translate(err, 'create', `persistentvolumeclaim ${claim.metadata!.name}`);
      if (translated.reason === 'conflict') return 'exists';
      throw translated;
    }
  }

  async createSecret(secret: V1Secret): Promise<void> {
    await this.run(() => this.api.createNamespacedSecret({ namespace: this.namespace, body: secret }), 'create', `secret ${secret.metadata!.name}`);
  }

  async readSecret(name: string): Promise<V1Secret | null> {
    return this.ignoreNotFound(() => this.api.readNamespacedSecret({ name, namespace: this.namespace }), 'get', `secret ${name}`);
  }

  async deleteSecret(name: string): Promise<void> {
    await this.ignoreNotFound(() => this.api.deleteNamespacedSecret({ name, namespace: this.namespace }), 'delete', `secret ${name}`);
  }

  async listSecrets(labelSelector: string): Promise<V1Secret[]> {
    return (await this.run(() => this.api.listNamespacedSecret({ namespace: this.namespace, labelSelector }), 'list', 'secrets')).items;
  }

  async createPod(pod: V1Pod): Promise<void> {
    await this.run(() => this.api.createNamespacedPod({ namespace: this.namespace, body: pod }), 'create', `pod ${pod.metadata!.name}`);
  }

  async listPods(labelSelector: string): Promise<V1Pod[]> {
    return (await this.run(() => this.api.listNamespacedPod({ namespace: this.namespace, labelSelector }), 'list', 'pods')).items;
  }

  /** Delete a pod; grace 0 for one that stopped answering (its node may be gone: nothing waits for its kubelet). */
  async deletePod(name: string, gracePeriodSeconds?: number): Promise<void> {
    await this.ignoreNotFound(
      () => this.api.deleteNamespacedPod({ name, namespace: this.namespace, ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}) }),
      'delete',
      `pod ${name}`,
    );
  }

  /** The events about a pod (attach and pull failures), oldest first. */
  async podEvents(name: string): Promise<CoreV1Event[]> {
    const list = await this.run(
      () => this.api.listNamespacedEvent({ namespace: this.namespace, fieldSelector: `involvedObject.kind=Pod,involvedObject.name=${name}` }),
      'list',
      'events',
    );
    return list.items;
  }

  async podLog(name: string, tailLines: number): Promise<string> {
    return this.run(() => this.api.readNamespacedPodLog({ name, namespace: this.namespace, tailLines }), 'get', `pods/log ${name}`);
  }

  private async run<T>(call: () => Promise<T>, verb: string, what: string): Promise<T> {
    try {
      return await call();
    } catch (err) {
      throw this.translate(err, verb, what);
    }
  }

  private async ignoreNotFound<T>(call: () => Promise<T>, verb: string, what: string): Promise<T | null> {
    try {
      return await call();
    } catch (err) {
      const translated = this.translate(err, verb, what);
      if (translated.reason === 'not-found') return null;
      throw translated;
    }
  }

  /** One message per failure: what was asked, what the API server said, and what to do about it. */
  private translate(err: unknown, verb: string, what: string): KubernetesError {
    const status = (err as { code?: unknown }).code;
    const asked = `${verb} ${what} in namespace ${this.namespace}`;
    if (typeof status !== 'number') {
      return new KubernetesError('unreachable', `the Kubernetes API server ${this.server} did not answer (${asked}): ${errorMessage(err)}`, { cause: err });
    }
    const said = statusMessage((err as { body?: unknown }).body) ?? `HTTP ${status}`;
    if (status === 403) {
      return new KubernetesError(
        'forbidden',
        `the Kubernetes API server refused to ${asked} (403: ${said}); the host's service account needs the Role in deploy/kubernetes/role.yaml`,
        { cause: err },
      );
    }
    if (status === 401)
      return new KubernetesError(
        'unauthorized',
        `the Kubernetes API server did not accept the host's credentials (${asked}, 401); check KUBECONFIG or the service account token`,
        { cause: err },
      );
    if (status === 404) return new KubernetesError('not-found', `${what} not found in namespace ${this.namespace}`, { cause: err });
    if (status === 409) return new KubernetesError('conflict', `${what} exists already (${said})`, { cause: err });
    if (status === 422 || status === 400)
      return new KubernetesError('invalid', `the Kubernetes API server rejected ${asked} (${status}: ${said}); check the PINCER_K8S_* settings`, {
        cause: err,
      });
    return new KubernetesError('server', `the Kubernetes API server failed to ${asked} (${status}: ${said}); retrying`, { cause: err });
  }
}

/** The `message` of a Kubernetes `Status` body (parsed or still text). */
function statusMessage(body: unknown): string | undefined {
  let parsed = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      // not JSON: the raw body (cut) is the best detail there is
      return body.slice(0, 300) || undefined;
    }
  }
  const message = (parsed as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : undefined;
}
