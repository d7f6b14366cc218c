import type { CoreV1Api, KubeConfig, ListWatch, V1Pod } from '@kubernetes/client-node';
import { Backoff } from '../../shared/backoff.js';
import { errorMessage, type Logger } from '../../shared/log.js';

/** What a pod listener hears: the pod as it is now, or null once it is gone. */
export type PodListener = (pod: V1Pod | null) => void;

/** Waits before watching again after the stream failed (the API server down, a proxy cutting it), doubling to the max. */
const RESTART_BASE_MS = 200;
const RESTART_MAX_MS = 5000;

/**
 * The host's one watch on the pods it manages (the client's `ListWatch` informer: list once, then a watch stream from
 * that `resourceVersion`), so a launch learns that its pod is ready, failed or gone when Kubernetes says so instead of
 * asking again and again. A stream that ends is resumed from the last version seen; one the API server answers 410
 * (too old) is listed again (pods gone meanwhile are heard of as deleted); one that fails is watched again with
 * back-off. One watch serves every session of the host, however many there are.
 */
export class PodWatch {
  private readonly listeners = new Map<string, Set<PodListener>>();
  private readonly backoff = new Backoff(RESTART_BASE_MS, RESTART_MAX_MS);
  private restartTimer: NodeJS.Timeout | null = null;
  private started = false;
  private stopped = false;
  private synced = false;
  private readonly syncedWaiters = new Set<() => void>();

  constructor(
    private readonly informer: ListWatch<V1Pod>,
    private readonly namespace: string,
    private readonly log: Logger,
  ) {
    informer.on('add', (pod) => this.tell(pod, pod));
    informer.on('update', (pod) => this.tell(pod, pod));
    informer.on('delete', (pod) => this.tell(pod, null));
    informer.on('error', (err: unknown) => this.restart(err));
  }

  /** The watch of `selector`'s pods in `namespace` (started on first use). */
  static create(k8s: typeof import('@kubernetes/client-node'), kc: KubeConfig, api: CoreV1Api, namespace: string, selector: string, log: Logger): PodWatch {
    const list = (): ReturnType<CoreV1Api['listNamespacedPod']> => api.listNamespacedPod({ namespace, labelSelector: selector });
    const informer = new k8s.ListWatch<V1Pod>(`/api/v1/namespaces/${namespace}/pods`, new k8s.Watch(kc), list, false, selector);
    return new PodWatch(informer, namespace, log);
  }

  /** The pod as last heard of (undefined: not heard of, or gone). */
  get(name: string): V1Pod | undefined {
    this.start();
    return this.informer.get(name, this.namespace);
  }

  /** Hear of every change to the pod `name` (from now on); returns how to stop. */
  on(name: string, listener: PodListener): () => void {
    this.start();
    let set = this.listeners.get(name);
    if (!set) this.listeners.set(name, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(name) === set) this.listeners.delete(name);
    };
  }

  /** Resolves once the first list has arrived (what `get` answers is the cluster's, not an empty cache). */
  whenSynced(signal?: AbortSignal): Promise<void> {
    this.start();
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.syncedWaiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.syncedWaiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    for (const done of this.syncedWaiters) done();
    if (this.started) await this.informer.stop();
  }

  private start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.informer.on('connect', () => this.connected());
    void this.informer.start().then(
      () => this.connected(),
      (err: unknown) => this.restart(err),
    );
  }

  /** A list arrived (or a watch resumed): what the cache holds is the cluster's now. */
  private connected(): void {
    if (this.informer.latestResourceVersion() === '') return; // the list is not in yet
    if (!this.synced) {
      this.synced = true;
      for (const done of [...this.syncedWaiters]) done();
    }
  }

  private tell(pod: V1Pod, now: V1Pod | null): void {
    this.backoff.succeed();
    this.connected();
    const name = pod.metadata?.name;
    if (!name) return;
    for (const listener of [...(this.listeners.get(name) ?? [])]) listener(now);
  }

  /** The stream failed (not a 410: the informer lists again by itself for that): watch again from where it was. */
  private restart(err: unknown): void {
    if (this.stopped || this.restartTimer) return;
    const { delayMs, failures, newError } = this.backoff.fail(errorMessage(err));
    const from = this.informer.latestResourceVersion();
    // One line per new error (and every tenth in a row): an API server down for an hour is not thousands of lines.
    if (newError || failures % 10 === 0)
      this.log.warn(
        `pod watch failed (${failures} in a row): ${errorMessage(err)}; watching again ${from ? `from resourceVersion ${from}` : 'after a new list'} in ${delayMs} ms`,
      );
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopped) return;
      void this.informer.start().catch((e: unknown) => this.restart(e));
    }, delayMs);
    this.restartTimer.unref();
  }
}
