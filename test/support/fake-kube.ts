import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { closeServer, listenOnLoopback, readBody, replyJson } from './fake-http.js';
import { BUILT_CLI } from './runner-harness.js';

/**
 * A fake Kubernetes API server and kubelet on loopback, as `@kubernetes/client-node` speaks to one: create, get, list
 * (label selectors) and delete of pods, persistentvolumeclaims and secrets, with `Status` bodies for 401/403/404/409/
 * 422 and a `resourceVersion` on every change; pod logs and events. The kubelet runs each pod's command — `pincer
 * session-serve` — as a local child: the claim is a folder, the Secret volume a folder of files, mount paths in the
 * arguments point there, `$(POD_IP)` is the pod's own 127.x.y.N address. It probes readiness, enforces ReadWriteOnce
 * across its fake nodes (a claim still attached elsewhere: `FailedAttachVolume` Multi-Attach events), and injects
 * faults: API errors, a node going down (its processes stopped, its pods left Terminating until the volume is
 * force-detached), images that cannot be pulled. It records every (verb, resource) it served.
 *
 * Pods can be watched (`?watch=true` or `=1`): a chunked stream of JSON lines ADDED/MODIFIED/DELETED from the
 * `resourceVersion` asked (replayed from its history, or the current pods as ADDED without one), BOOKMARK when asked
 * with `allowWatchBookmarks`, and an ERROR 410 (Expired) for a version older than its history (`compact()`), which
 * makes a client list again. `dropWatches()` ends every open stream, as an API server or a proxy does.
 */
export const FAKE_TOKEN = 'fake-kube-token-0123456789';
export const NAMESPACE = 'pincer-test';

// The fake reads and writes arbitrary Kubernetes JSON (pod specs and statuses): typed loosely on purpose.
/* eslint-disable @typescript-eslint/no-explicit-any */
type Obj = {
  apiVersion?: string;
  kind?: string;
  metadata: Meta;
  spec?: any;
  status?: any;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  [k: string]: unknown;
};
/* eslint-enable @typescript-eslint/no-explicit-any */
interface Meta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  creationTimestamp?: string;
  deletionTimestamp?: string;
}

interface PodRun {
  pod: Obj;
  node: string;
  ip: string;
  child: ChildProcess | null;
  log: string;
  exited: boolean;
  /** the volume is attached for this pod (released when it is gone). */
  attached: boolean;
  timers: NodeJS.Timeout[];
}

export interface FakeKubeOptions {
  nodes?: string[];
  /** how long a volume stays attached to a pod of a down node after the pod was deleted (Kubernetes: 6 min). */
  forceDetachMs?: number;
  /** how long attaching a volume takes. */
  attachDelayMs?: number;
  /** images whose pull fails (ErrImagePull). */
  badImages?: string[];
}

interface Watcher {
  res: http.ServerResponse;
  labelSelector: string | null;
  fieldSelector: string | null;
  bookmarks: boolean;
}

export interface InjectedApiFailure {
  verb: string;
  resource: string;
  status: number;
  count: number;
}

export class FakeKube {
  readonly calls: { verb: string; resource: string }[] = [];
  /** what the kubelet did, in order: `started <pod>`, `force-detached <pod>`, `exited <pod>`. */
  readonly timeline: string[] = [];
  readonly claimsDir: string;
  /** the `resourceVersion` each pod watch was opened from (null: none, the client listed first). */
  readonly watchesFrom: (string | null)[] = [];
  private readonly objects = new Map<string, Map<string, Obj>>([
    ['pods', new Map()],
    ['persistentvolumeclaims', new Map()],
    ['secrets', new Map()],
  ]);
  private readonly events: Obj[] = [];
  private readonly runs = new Map<string, PodRun>();
  /** claim → the node it is attached to, and the pods using it there. */
  private readonly attachments = new Map<string, { node: string; pods: Set<string> }>();
  private readonly down = new Set<string>();
  /** the kubelet's readiness probes fail while this is set (a pod that runs but never serves). */
  private readinessHeld = false;
  private readonly failures: InjectedApiFailure[] = [];
  /** every change to a pod since the last compaction, for watches that resume from a version. */
  private readonly history: { version: number; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: Obj }[] = [];
  /** versions up to this one are gone from the history: a watch from one of them gets 410 Expired. */
  private compactedAt = 0;
  private readonly watchers = new Set<Watcher>();
  /** everything the fake keeps on disk: claims, Secret volumes, kubeconfigs. */
  readonly root: string;
  private version = 1;
  private nextIp = 2;
  private nextNode = 0;
  private readonly ipPrefix: string;
  private server!: http.Server;
  url = '';

  private constructor(private readonly options: Required<FakeKubeOptions>) {
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-fake-kube-'));
    this.claimsDir = path.join(this.root, 'claims');
    fs.mkdirSync(this.claimsDir);
    // Each fake cluster its own 127.x.y.0/24, so that test files running at once never share a pod address.
    this.ipPrefix = `127.${10 + Math.floor(Math.random() * 240)}.${1 + Math.floor(Math.random() * 250)}.`;
  }

  static async start(options: FakeKubeOptions = {}): Promise<FakeKube> {
    const kube = new FakeKube({ nodes: ['node-a', 'node-b'], forceDetachMs: 3000, attachDelayMs: 0, badImages: [], ...options });
    kube.server = http.createServer((req, res) => void kube.handle(req, res));
    kube.url = await listenOnLoopback(kube.server);
    return kube;
  }

  /** A kubeconfig for the fake (plain http needs `insecure-skip-tls-verify` in client-node). */
  writeKubeconfig(server = this.url): string {
    const file = path.join(this.root, `kubeconfig-${randomUUID().slice(0, 6)}`);
    fs.writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        `- name: fake\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
        'users:',
        `- name: fake\n  user:\n    token: ${FAKE_TOKEN}`,
        'contexts:',
        `- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: ${NAMESPACE}`,
        'current-context: fake',
        '',
      ].join('\n'),
    );
    return file;
  }

  /** The next `count` requests of `verb` on `resource` (`*`: any) answer `status`. */
  fail(verb: string, resource: string, status: number, count = 1): void {
    this.failures.push({ verb, resource, status, count });
  }

  clearFailures(): void {
    this.failures.length = 0;
  }

  /** From now on (until released) every pod's readiness probe fails: pods run, none becomes Ready. */
  holdReadiness(held: boolean): void {
    this.readinessHeld = held;
  }

  /** End every open watch stream (the client resumes from the last version it saw). */
  dropWatches(): void {
    for (const watcher of this.watchers) watcher.res.end();
    this.watchers.clear();
  }

  /** Forget the pods' change history: a watch resuming from an older version is answered 410 Expired. */
  compact(): void {
    this.history.length = 0;
    this.compactedAt = this.version;
  }

  /** A BOOKMARK to each watch that asked for them: the current version, no object change. */
  bookmark(): void {
    for (const watcher of this.watchers) {
      if (watcher.bookmarks)
        writeEvent(watcher.res, 'BOOKMARK', { kind: 'Pod', apiVersion: 'v1', metadata: { name: '', resourceVersion: String(this.version) } });
    }
  }

  /** Open pod watch streams. */
  get openWatches(): number {
    return this.watchers.size;
  }

  list(resource: 'pods' | 'persistentvolumeclaims' | 'secrets'): Obj[] {
    return [...this.objects.get(resource)!.values()];
  }

  pod(name: string): Obj | undefined {
    return this.objects.get('pods')!.get(name);
  }

  podLog(name: string): string {
    return this.runs.get(name)?.log ?? '';
  }

  /** The pid of a pod's process while it runs. */
  podPid(name: string): number | undefined {
    const run = this.runs.get(name);
    return run && !run.exited ? run.child?.pid : undefined;
  }

  nodeOf(name: string): string | undefined {
    return this.runs.get(name)?.node;
  }

  /** The pod's process dies (OOM, a crash): the pod fails. */
  killPod(name: string): void {
    const run = this.runs.get(name);
    if (run?.child?.pid && !run.exited) process.kill(-run.child.pid, 'SIGKILL');
  }

  /**
   * The node stops answering: its processes freeze (nothing they do reaches anyone), their pods' status stops
   * changing, a deleted pod stays Terminating, and its volume is force-detached `forceDetachMs` after the deletion.
   */
  nodeDown(node: string): void {
    this.down.add(node);
    for (const run of this.runs.values()) if (run.node === node && run.child?.pid && !run.exited) process.kill(-run.child.pid, 'SIGSTOP');
  }

  async close(): Promise<void> {
    this.dropWatches();
    for (const run of this.runs.values()) {
      for (const timer of run.timers) clearTimeout(timer);
      if (run.child?.pid && !run.exited) {
        try {
          process.kill(-run.child.pid, 'SIGKILL');
        } catch {
          // gone already
        }
        await new Promise((resolve) => (run.exited ? resolve(undefined) : run.child!.once('exit', resolve)));
      }
    }
    await closeServer(this.server);
    fs.rmSync(this.root, { recursive: true, force: true });
  }

  // ---- the API server ----

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const match = /^\/api\/v1\/namespaces\/([^/]+)\/([a-z]+)(?:\/([^/]+))?(?:\/(log))?$/.exec(url.pathname);
    if (req.headers.authorization !== `Bearer ${FAKE_TOKEN}`) return status(res, 401, 'Unauthorized', 'Unauthorized');
    if (!match) return status(res, 404, 'NotFound', `the server could not find the requested resource (${url.pathname})`);
    const [, namespace, plural, name, sub] = match as unknown as [string, string, string, string | undefined, string | undefined];
    const resource = sub ? `${plural}/${sub}` : plural;
    const verb =
      req.method === 'POST'
        ? 'create'
        : req.method === 'DELETE'
          ? 'delete'
          : req.method === 'GET'
            ? name
              ? 'get'
              : ['true', '1'].includes(url.searchParams.get('watch') ?? '')
                ? 'watch'
                : 'list'
            : (req.method ?? '').toLowerCase();
    this.calls.push({ verb, resource });
    const body = req.method === 'POST' ? (JSON.parse((await readBody(req)).toString('utf8') || '{}') as Obj) : null;
    const injected = this.failures.find((f) => f.count > 0 && (f.verb === '*' || f.verb === verb) && (f.resource === '*' || f.resource === resource));
    if (injected) {
      injected.count -= 1;
      const reason = injected.status === 403 ? 'Forbidden' : injected.status >= 500 ? 'InternalError' : 'BadRequest';
      return status(res, injected.status, reason, `${plural} ${name ?? ''} is ${reason.toLowerCase()}: injected by the test`);
    }
    if (namespace !== NAMESPACE) return status(res, 403, 'Forbidden', `namespace ${namespace} is not this test's`);
    if (plural === 'events')
      return replyJson(res, 200, {
        apiVersion: 'v1',
        kind: 'EventList',
        metadata: { resourceVersion: String(this.version) },
        items: this.events.filter((e) => matchesFields(e, url.searchParams.get('fieldSelector'))),
      });
    const store = this.objects.get(plural);
    if (!store) return status(res, 404, 'NotFound', `no resource ${plural}`);
    if (sub === 'log') {
      const run = this.runs.get(name!);
      if (!run) return status(res, 404, 'NotFound', `pods "${name}" not found`);
      const tail = Number(url.searchParams.get('tailLines') ?? 0);
      const lines = run.log.split('\n');
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.end(tail > 0 ? lines.slice(-tail - 1).join('\n') : run.log);
      return;
    }
    const kind = plural === 'pods' ? 'Pod' : plural === 'secrets' ? 'Secret' : 'PersistentVolumeClaim';
    if (verb === 'create') {
      const created = body!;
      if (!created.metadata?.name || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(created.metadata.name))
        return status(res, 422, 'Invalid', `${kind} "${created.metadata?.name}" is invalid: metadata.name: a lowercase RFC 1123 subdomain`);
      if (store.has(created.metadata.name)) return status(res, 409, 'AlreadyExists', `${plural} "${created.metadata.name}" already exists`);
      created.metadata = { ...created.metadata, namespace, uid: randomUUID(), creationTimestamp: new Date().toISOString() };
      if (plural === 'secrets' && created.stringData) {
        created.data = { ...created.data, ...Object.fromEntries(Object.entries(created.stringData).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) };
        delete created.stringData;
      }
      if (plural === 'persistentvolumeclaims') {
        fs.mkdirSync(path.join(this.claimsDir, created.metadata.name), { recursive: true });
        created.status = { phase: 'Bound' };
      }
      if (plural === 'pods') created.status = { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False' }] };
      this.touch(created);
      store.set(created.metadata.name, created);
      if (plural === 'pods') this.emit('ADDED', created);
      if (plural === 'pods') this.schedule(created);
      return replyJson(res, 201, created);
    }
    if (verb === 'watch') {
      if (plural !== 'pods') return status(res, 405, 'MethodNotAllowed', `this fake watches pods only, not ${plural}`);
      return this.watch(req, res, url);
    }
    if (verb === 'list') {
      const items = [...store.values()].filter((o) => matchesLabels(o, url.searchParams.get('labelSelector')));
      return replyJson(res, 200, { apiVersion: 'v1', kind: `${kind}List`, metadata: { resourceVersion: String(this.version) }, items });
    }
    const found = store.get(name!);
    if (!found) return status(res, 404, 'NotFound', `${plural} "${name}" not found`);
    if (verb === 'get') return replyJson(res, 200, found);
    if (verb === 'delete') {
      if (plural === 'pods')
        this.deletePod(
          found,
          url.searchParams.has('gracePeriodSeconds') ? Number(url.searchParams.get('gracePeriodSeconds')) : (found.spec?.terminationGracePeriodSeconds ?? 30),
        );
      else {
        store.delete(name!);
        if (plural === 'persistentvolumeclaims') fs.rmSync(path.join(this.claimsDir, name!), { recursive: true, force: true });
      }
      return replyJson(res, 200, found);
    }
    return status(res, 405, 'MethodNotAllowed', `${req.method} is not supported here`);
  }

  private touch(obj: Obj): void {
    this.version += 1;
    obj.metadata.resourceVersion = String(this.version);
    if (obj.kind === 'Pod' && this.objects.get('pods')!.get(obj.metadata.name) === obj) this.emit('MODIFIED', obj);
  }

  /** Record a pod's change (a copy: the pod goes on changing) and send it to the watches it matches. */
  private emit(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: Obj): void {
    const object = JSON.parse(JSON.stringify(pod)) as Obj;
    this.history.push({ version: this.version, type, object });
    for (const watcher of this.watchers) {
      if (matchesLabels(object, watcher.labelSelector) && matchesFields(object, watcher.fieldSelector)) writeEvent(watcher.res, type, object);
    }
  }

  private watch(req: http.IncomingMessage, res: http.ServerResponse, url: URL): void {
    const from = url.searchParams.get('resourceVersion') || null;
    this.watchesFrom.push(from);
    const watcher: Watcher = {
      res,
      labelSelector: url.searchParams.get('labelSelector'),
      fieldSelector: url.searchParams.get('fieldSelector'),
      bookmarks: url.searchParams.get('allowWatchBookmarks') === 'true',
    };
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders(); // the client sees the stream open before the first event
    const matches = (o: Obj): boolean => matchesLabels(o, watcher.labelSelector) && matchesFields(o, watcher.fieldSelector);
    if (from === null || from === '0') {
      for (const pod of this.objects.get('pods')!.values()) if (matches(pod)) writeEvent(res, 'ADDED', pod);
    } else if (Number(from) < this.compactedAt) {
      writeEvent(res, 'ERROR', {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `too old resource version: ${from} (${this.compactedAt})`,
        reason: 'Expired',
        code: 410,
      } as unknown as Obj);
      res.end();
      return;
    } else {
      for (const change of this.history) if (change.version > Number(from) && matches(change.object)) writeEvent(res, change.type, change.object);
    }
    this.watchers.add(watcher);
    const forget = (): void => void this.watchers.delete(watcher);
    req.on('close', forget);
    res.on('close', forget);
  }

  private event(pod: Obj, reason: string, message: string, type = 'Warning'): void {
    const existing = this.events.find(
      (e) => (e.involvedObject as Meta & { name: string }).name === pod.metadata.name && e.reason === reason && e.message === message,
    );
    if (existing) {
      existing.count = (existing.count as number) + 1;
      return;
    }
    this.events.push({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${pod.metadata.name}.${randomUUID().slice(0, 8)}`, uid: randomUUID() },
      involvedObject: { kind: 'Pod', name: pod.metadata.name, namespace: NAMESPACE },
      reason,
      message,
      type,
      count: 1,
    });
  }

  // ---- the kubelet ----

  private schedule(pod: Obj): void {
    const up = this.options.nodes.filter((n) => !this.down.has(n));
    if (up.length === 0) {
      this.event(pod, 'FailedScheduling', '0/2 nodes are available: node(s) were unreachable');
      return;
    }
    const node = up[this.nextNode++ % up.length]!;
    const ip = `${this.ipPrefix}${this.nextIp++}`;
    const run: PodRun = { pod, node, ip, child: null, log: '', exited: false, attached: false, timers: [] };
    this.runs.set(pod.metadata.name, run);
    pod.spec.nodeName = node;
    pod.status = {
      phase: 'Pending',
      podIP: ip,
      podIPs: [{ ip }],
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'False' },
      ],
    };
    this.touch(pod);
    this.attach(run);
  }

  private claimsOf(pod: Obj): string[] {
    return ((pod.spec.volumes ?? []) as { persistentVolumeClaim?: { claimName: string } }[]).flatMap((v) =>
      v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : [],
    );
  }

  /** Attach the pod's ReadWriteOnce claims to its node, waiting while one is attached to another. */
  private attach(run: PodRun): void {
    if (!this.runs.has(run.pod.metadata.name) || run.pod.metadata.deletionTimestamp) return;
    const claims = this.claimsOf(run.pod);
    for (const claim of claims) {
      if (!this.objects.get('persistentvolumeclaims')!.has(claim)) {
        this.event(run.pod, 'FailedScheduling', `persistentvolumeclaim "${claim}" not found`);
        run.timers.push(setTimeout(() => this.attach(run), 100));
        return;
      }
      const at = this.attachments.get(claim);
      if (at && at.node !== run.node && at.pods.size > 0) {
        this.event(
          run.pod,
          'FailedAttachVolume',
          `Multi-Attach error for volume "pvc-${claim}" Volume is already exclusively attached to one node and can't be attached to another`,
        );
        run.timers.push(setTimeout(() => this.attach(run), 100));
        return;
      }
    }
    for (const claim of claims) {
      const at = this.attachments.get(claim);
      if (at && at.node === run.node) at.pods.add(run.pod.metadata.name);
      else this.attachments.set(claim, { node: run.node, pods: new Set([run.pod.metadata.name]) });
    }
    run.attached = true;
    run.timers.push(setTimeout(() => this.startContainer(run), this.options.attachDelayMs));
  }

  private release(run: PodRun): void {
    if (!run.attached) return;
    run.attached = false;
    for (const claim of this.claimsOf(run.pod)) this.attachments.get(claim)?.pods.delete(run.pod.metadata.name);
  }

  private startContainer(run: PodRun): void {
    const { pod } = run;
    if (pod.metadata.deletionTimestamp) return;
    const container = pod.spec.containers[0];
    if (this.options.badImages.includes(container.image)) {
      pod.status.containerStatuses = [
        { name: container.name, ready: false, state: { waiting: { reason: 'ErrImagePull', message: `failed to pull image "${container.image}": not found` } } },
      ];
      this.event(pod, 'Failed', `Failed to pull image "${container.image}"`);
      this.touch(pod);
      return;
    }
    const podDir = path.join(this.root, 'pods', pod.metadata.name);
    fs.mkdirSync(podDir, { recursive: true });
    const volumes = new Map<string, string>();
    for (const volume of pod.spec.volumes ?? []) {
      if (volume.persistentVolumeClaim) volumes.set(volume.name, path.join(this.claimsDir, volume.persistentVolumeClaim.claimName));
      else if (volume.secret) {
        const dir = path.join(podDir, `secret-${volume.name}`);
        fs.mkdirSync(dir, { recursive: true });
        const secret = this.objects.get('secrets')!.get(volume.secret.secretName);
        for (const [key, value] of Object.entries(secret?.data ?? {})) fs.writeFileSync(path.join(dir, key), Buffer.from(value, 'base64'), { mode: 0o400 });
        volumes.set(volume.name, dir);
      } else volumes.set(volume.name, fs.mkdtempSync(path.join(podDir, 'empty-')));
    }
    const mounts = ((container.volumeMounts ?? []) as { name: string; mountPath: string; subPath?: string }[])
      .map((m) => ({ mountPath: m.mountPath, local: path.join(volumes.get(m.name)!, m.subPath ?? '') }))
      .sort((a, b) => b.mountPath.length - a.mountPath.length);
    for (const m of mounts) fs.mkdirSync(m.local, { recursive: true });
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' };
    for (const variable of container.env ?? []) {
      if (variable.value !== undefined) env[variable.name] = variable.value;
      else if (variable.valueFrom?.fieldRef?.fieldPath === 'status.podIP') env[variable.name] = run.ip;
    }
    const local = (arg: string): string => {
      const expanded = arg.replace(/\$\(([A-Z_][A-Z0-9_]*)\)/g, (_, n: string) => env[n] ?? '');
      const mount = mounts.find((m) => expanded === m.mountPath || expanded.startsWith(`${m.mountPath}/`));
      return mount ? mount.local + expanded.slice(mount.mountPath.length) : expanded;
    };
    const command = [...(container.command ?? []), ...(container.args ?? [])].map(local);
    const argv = command[0] === 'pincer' ? [process.execPath, BUILT_CLI, ...command.slice(1)] : command;
    const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    run.child = child;
    this.timeline.push(`started ${pod.metadata.name}`);
    const collect = (chunk: Buffer): void => {
      run.log += chunk.toString('utf8');
      if (run.log.length > 200_000) run.log = run.log.slice(-100_000);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    pod.status = {
      ...pod.status,
      phase: 'Running',
      startTime: new Date().toISOString(),
      containerStatuses: [{ name: container.name, ready: false, state: { running: { startedAt: new Date().toISOString() } } }],
    };
    this.touch(pod);
    child.once('exit', (code, signal) => this.onExit(run, code ?? (signal ? 137 : 1)));
    this.probe(run);
  }

  private probe(run: PodRun): void {
    const { pod } = run;
    const probe = pod.spec.containers[0].readinessProbe?.httpGet as { path: string; port: number } | undefined;
    if (run.exited || !probe || pod.metadata.deletionTimestamp) return;
    if (this.down.has(run.node)) return; // nobody reports for a dead node
    if (this.readinessHeld) {
      this.setReady(run, false);
      run.timers.push(setTimeout(() => this.probe(run), 100));
      return;
    }
    const req = http.get({ host: run.ip, port: probe.port, path: probe.path, timeout: 1000 }, (res) => {
      res.resume();
      this.setReady(run, res.statusCode === 200);
    });
    req.on('error', () => this.setReady(run, false));
    req.on('timeout', () => req.destroy());
    run.timers.push(setTimeout(() => this.probe(run), 100));
  }

  private setReady(run: PodRun, ready: boolean): void {
    if (run.exited || this.down.has(run.node)) return;
    const condition = (run.pod.status.conditions as { type: string; status: string }[]).find((c) => c.type === 'Ready')!;
    const value = ready ? 'True' : 'False';
    if (condition.status === value) return;
    condition.status = value;
    run.pod.status.containerStatuses[0].ready = ready;
    this.touch(run.pod);
  }

  private onExit(run: PodRun, code: number): void {
    run.exited = true;
    this.timeline.push(`exited ${run.pod.metadata.name}`);
    for (const timer of run.timers) clearTimeout(timer);
    const { pod } = run;
    if (!this.down.has(run.node)) {
      pod.status = {
        ...pod.status,
        phase: code === 0 ? 'Succeeded' : 'Failed',
        conditions: (pod.status.conditions as object[]).map((c) => ({ ...c, ...((c as { type: string }).type === 'Ready' ? { status: 'False' } : {}) })),
        containerStatuses: [{ name: 'session', ready: false, state: { terminated: { exitCode: code } } }],
      };
      this.touch(pod);
      this.release(run);
    }
    if (pod.metadata.deletionTimestamp && !this.down.has(run.node)) this.remove(run);
  }

  private deletePod(pod: Obj, graceSeconds: number): void {
    const run = this.runs.get(pod.metadata.name);
    if (!pod.metadata.deletionTimestamp) {
      pod.metadata.deletionTimestamp = new Date().toISOString();
      this.touch(pod);
    }
    if (!run) {
      this.objects.get('pods')!.delete(pod.metadata.name);
      this.version += 1;
      pod.metadata.resourceVersion = String(this.version);
      return this.emit('DELETED', pod);
    }
    if (this.down.has(run.node)) {
      // The kubelet never confirms: the pod stays Terminating until its volume is force-detached.
      run.timers.push(
        setTimeout(() => {
          if (run.child?.pid && !run.exited) process.kill(-run.child.pid, 'SIGKILL');
          this.timeline.push(`force-detached ${pod.metadata.name}`);
          this.release(run);
          this.remove(run);
        }, this.options.forceDetachMs),
      );
      return;
    }
    if (!run.child || run.exited) {
      this.release(run);
      return this.remove(run);
    }
    const pid = run.child.pid!;
    if (graceSeconds === 0) process.kill(-pid, 'SIGKILL');
    else {
      process.kill(-pid, 'SIGTERM');
      run.timers.push(setTimeout(() => !run.exited && process.kill(-pid, 'SIGKILL'), graceSeconds * 1000));
    }
  }

  private remove(run: PodRun): void {
    for (const timer of run.timers) clearTimeout(timer);
    this.objects.get('pods')!.delete(run.pod.metadata.name);
    this.version += 1;
    run.pod.metadata.resourceVersion = String(this.version);
    this.emit('DELETED', run.pod);
  }
}

function status(res: http.ServerResponse, code: number, reason: string, message: string): void {
  replyJson(res, code, { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Failure', message, reason, code });
}

function writeEvent(res: http.ServerResponse, type: string, object: Obj): void {
  if (!res.writableEnded) res.write(`${JSON.stringify({ type, object })}\n`);
}

function matchesLabels(obj: Obj, selector: string | null): boolean {
  if (!selector) return true;
  return selector.split(',').every((term) => {
    const [key, value] = term.split('=') as [string, string];
    return obj.metadata.labels?.[key] === value;
  });
}

/** Field selectors on events (`involvedObject.kind`, `.name`) and on any object (`metadata.name`). */
function matchesFields(obj: Obj, selector: string | null): boolean {
  if (!selector) return true;
  const involved = obj.involvedObject as { kind: string; name: string } | undefined;
  return selector.split(',').every((term) => {
    const [key, value] = term.split('=') as [string, string];
    if (key === 'metadata.name') return obj.metadata.name === value;
    if (key === 'involvedObject.kind') return involved?.kind === value;
    if (key === 'involvedObject.name') return involved?.name === value;
    return false;
  });
}
