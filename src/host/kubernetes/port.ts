import { randomBytes } from 'node:crypto';
import type { ConfigFile } from '../../db/config-file.js';
import type { TurnUsageRow } from '../../db/usage.js';
import { Backoff } from '../../shared/backoff.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { RunnerCredentials } from '../session/runners.js';
import {
  idleSessionState,
  isSessionPortError,
  SessionPortError,
  type Admission,
  type DrainResult,
  type SessionSnapshot,
  type SessionState,
} from '../session/port.js';
import { ForwardingSessionPort } from '../session/forwarding-port.js';
import type { LaunchDocument } from '../session/serve-protocol.js';
import type { HostConfig } from '../types.js';
import { isKubernetesError, type SessionCluster } from './cluster.js';
import { adoptLaunch, endLaunch, LaunchError, startLaunch, type LaunchContext, type PodLaunch } from './launch.js';
import { POD_PATHS, type SessionObjects } from './manifests.js';
import { isHostOnlyVariable, type KubernetesSettings } from './settings.js';

/** Tell the chat once a launch has failed this many times in a row (at once for a failure retrying cannot fix). */
const FAILURE_NOTICE_AT = 3;
/** Health checks missed in a row before a pod counts as lost (its node may be gone). */
const HEARTBEAT_MISSES = 2;
/** The longest a timer can wait (setTimeout's limit). */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface KubernetesSessionOptions {
  session: SessionObjects;
  config: Pick<HostConfig, 'runners' | 'sweep'>;
  settings: KubernetesSettings;
  cluster: SessionCluster;
  /** the next launch epoch (stored by the host before the launch starts), and the current one (to adopt a pod). */
  nextEpoch(): number;
  currentEpoch(): number;
  /** when the session next has something due (from the central DB: a drained session is woken for it). */
  nextWakeAt: string | null;
  credentials?: RunnerCredentials;
  filesDir: string;
  orphanMs: number;
  log: Logger;
  onLaunchFailures(failures: number, why: string): void;
  /** an event about a starting pod worth telling the chat (the volume is still attached to a lost node). */
  onPodEvent?(reason: string, message: string): void;
}

/**
 * A session on Kubernetes (`PINCER_RUNNER=kubernetes`): a pod per launch running `pincer session-serve` on the
 * session's own claim, reached by its IP through the remote port. A pod is started when the session has work (a
 * message, an answer, a restart, a task falling due) and drained and deleted after `idleMs` with nothing open, due or
 * undelivered — its claim stays. A pod that stops answering (health checks or calls fail) is deleted with grace 0 and
 * the next launch gets a new epoch and name, so the old one, if its node comes back, is fenced off.
 */
export class KubernetesSessionPort extends ForwardingSessionPort {
  private current: PodLaunch | null = null;
  private starting: Promise<PodLaunch> | null = null;
  private adopted: Promise<void> | null = null;
  /** the end of the last launch (its pod deleted): the next one starts after it. */
  private ending: Promise<void> = Promise.resolve();
  private readonly backoff: Backoff;
  private nextStartAt = 0;
  private closed = false;
  /** the session has work and no pod: the next `sync` starts one. */
  private wanted = false;
  private wakers = new Set<() => void>();
  private wakeTimer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private unwatchPod: (() => void) | null = null;
  private misses = 0;
  private inFlight = 0;
  private lastActiveAt = Date.now();
  private syncedWith: PodLaunch | null = null;
  private config: ConfigFile | null = null;
  private admission: Admission | null = null;
  /** the session as last seen (what a scaled-to-zero session reports). */
  private known: SessionState;
  private readonly ctx: LaunchContext;

  constructor(private readonly options: KubernetesSessionOptions) {
    super();
    this.backoff = new Backoff(options.config.runners.backoffBaseMs, options.config.runners.backoffMaxMs);
    this.known = idleSessionState(options.nextWakeAt);
    this.ctx = {
      cluster: options.cluster,
      settings: options.settings,
      session: options.session,
      stopGraceMs: options.config.runners.stopGraceMs,
      filesDir: options.filesDir,
      log: options.log,
      onPodEvent: (reason, message) => options.onPodEvent?.(reason, message),
    };
    this.scheduleWake(options.nextWakeAt);
  }

  get sessionId(): string {
    return this.options.session.sessionId;
  }

  /** The current launch's pod name and epoch, while one serves. */
  get launch(): { name: string; epoch: number } | null {
    return this.current ? { name: this.current.name, epoch: this.current.epoch } : null;
  }

  async sync(afterVersion: number, afterSeq: number, waitMs: number, signal?: AbortSignal): Promise<SessionSnapshot> {
    await this.adopt().catch(() => undefined); // an API server that does not answer: the next launch says so
    if (!this.current && !this.wanted) {
      await this.waitForWork(waitMs, signal);
      if (!this.current && !this.wanted) return { version: afterVersion, state: this.known, events: [], outbound: [] };
    }
    // Wait no longer than the pod may stay idle, so that it is let go on time.
    const idleLeft = Math.max(0, this.options.settings.idleMs - (Date.now() - this.lastActiveAt));
    const snapshot = await this.use(
      (p, launch) => p.sync(launch !== this.syncedWith ? 0 : afterVersion, afterSeq, Math.min(waitMs, idleLeft + 50), signal),
      (launch) => (this.syncedWith = launch),
      signal,
      false,
    );
    this.known = snapshot.state;
    this.noteActivity(snapshot);
    return snapshot;
  }

  protected forward<T>(call: (port: PodLaunch['port']) => Promise<T>): Promise<T> {
    return this.use((p) => call(p));
  }

  override async state(): Promise<SessionState> {
    if (!this.current) return this.known;
    return this.use((p) => p.state(), undefined, undefined, false);
  }
  /** Kept for the next launch; published now only to a pod that runs (publishing starts none). */
  async publishConfig(config: ConfigFile): Promise<void> {
    this.config = config;
    if (this.current) await this.use((p) => p.publishConfig(config), undefined, undefined, false);
  }
  async setAdmission(admission: Admission): Promise<void> {
    this.admission = admission;
    if (this.current) await this.use((p) => p.setAdmission(admission), undefined, undefined, false);
  }
  override async runner(command: 'start' | 'stop'): Promise<void> {
    if (command === 'stop' && !this.current) return;
    await this.use((p) => p.runner(command));
  }
  override async usageAfter(afterId: number): Promise<TurnUsageRow[]> {
    if (!this.current) return []; // collected on every turn while the pod ran
    return this.use((p) => p.usageAfter(afterId), undefined, undefined, false);
  }
  override async done(ids: string[], incarnation: number): Promise<string[]> {
    if (!this.current) return []; // asked again while a pod runs
    return this.use((p) => p.done(ids, incarnation), undefined, undefined, false);
  }
  override async logTail(lines: number): Promise<string[]> {
    if (!this.current) return [`(session ${this.sessionId} has no pod now; its log is on its volume and shows again when it next runs)`];
    return this.use((p) => p.logTail(lines), undefined, undefined, false);
  }

  async drain(): Promise<DrainResult> {
    if (!this.current) return { nextDueAt: this.known.nextDueAt, providerSessionId: this.known.providerSessionId };
    return this.scaleToZero('asked to drain');
  }

  /** Let go (the host stops): calls end, the pod keeps running for the next host to adopt (or stops when orphaned). */
  async close(): Promise<void> {
    this.closed = true;
    this.stopHeartbeat();
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    for (const wake of this.wakers) wake();
    await this.current?.port.close();
    await this.ending.catch(() => undefined); // the ending launch logged its own failure
  }

  // ---- launches ----

  /**
   * Run `call` on the current launch, starting one when needed (`start`); a launch that stops answering is ended.
   * Calls other than `sync` count as activity (the pod is not idle while the host talks to it).
   */
  private async use<T>(
    call: (port: PodLaunch['port'], launch: PodLaunch) => Promise<T>,
    answered: (launch: PodLaunch) => void = () => undefined,
    signal?: AbortSignal,
    active = true,
  ): Promise<T> {
    const launch = await this.launched();
    if (active) this.lastActiveAt = Date.now();
    this.inFlight += active ? 1 : 0;
    try {
      const result = await call(launch.port, launch);
      answered(launch);
      return result;
    } catch (err) {
      if (isSessionPortError(err) && !signal?.aborted && !this.closed && this.current === launch) this.lose(launch, `${err.reason}: ${err.message}`);
      throw err;
    } finally {
      this.inFlight -= active ? 1 : 0;
      if (active) this.lastActiveAt = Date.now();
    }
  }

  private launched(): Promise<PodLaunch> {
    if (this.closed) return Promise.reject(new SessionPortError('unavailable', `session ${this.sessionId} is closed`));
    if (this.current) return Promise.resolve(this.current);
    this.wanted = true;
    if (Date.now() < this.nextStartAt) {
      return Promise.reject(new SessionPortError('unavailable', `session ${this.sessionId}: next launch in ${this.nextStartAt - Date.now()} ms`));
    }
    this.starting ??= this.startPod().then(
      (launch) => {
        this.starting = null;
        this.backoff.succeed();
        this.current = launch;
        this.wanted = false;
        this.lastActiveAt = Date.now();
        this.startHeartbeat(launch);
        for (const wake of this.wakers) wake();
        return launch;
      },
      (err: unknown) => {
        this.starting = null;
        const permanent = (err instanceof LaunchError && err.permanent) || (isKubernetesError(err) && err.permanent);
        const failed = this.backoff.fail(errorMessage(err));
        // Retrying cannot fix it: not before the longest back-off, and the chat is told once per distinct error.
        const delayMs = permanent ? this.options.config.runners.backoffMaxMs : failed.delayMs;
        this.nextStartAt = Date.now() + delayMs;
        this.options.log.warn(
          `session ${this.sessionId}: pod could not be started (${failed.failures} in a row, next try in ${delayMs} ms): ${errorMessage(err)}`,
        );
        // A start that timed out kept the chat waiting that long already: it is told at the first one.
        const timedOut = err instanceof LaunchError && err.timedOut;
        const tell = permanent ? failed.newError : failed.failures % FAILURE_NOTICE_AT === 0 || (timedOut && failed.failures === 1);
        if (tell) this.options.onLaunchFailures(failed.failures, errorMessage(err));
        throw new SessionPortError('unavailable', `session ${this.sessionId} could not be started: ${errorMessage(err)}`, { cause: err });
      },
    );
    return this.starting;
  }

  /** A pod a restarted host finds is used as it is when it is the current epoch's and ready; others are deleted. */
  private adopt(): Promise<void> {
    this.adopted ??= adoptLaunch(this.ctx, this.options.currentEpoch()).then(
      ({ adopted, leftovers }) => {
        if (leftovers > 0) this.wanted = true; // a launch ended without a drain: it may have left work
        if (adopted && !this.current) {
          this.current = adopted;
          this.options.log.info(`session ${this.sessionId}: adopted pod ${adopted.name} (epoch ${adopted.epoch}) on ${adopted.url}`);
          this.startHeartbeat(adopted);
          this.lastActiveAt = Date.now();
        }
      },
      (err: unknown) => {
        this.adopted = null;
        this.options.log.warn(`session ${this.sessionId}: could not look for its pods: ${errorMessage(err)}`);
        throw err;
      },
    );
    return this.adopted;
  }

  private async startPod(): Promise<PodLaunch> {
    await this.adopt();
    if (this.current) return this.current;
    await this.ending;
    const { options } = this;
    const epoch = options.nextEpoch();
    const token = randomBytes(24).toString('base64url');
    const launch = await startLaunch(this.ctx, epoch, this.launchDocument(epoch, token));
    try {
      if (this.config) await launch.port.publishConfig(this.config);
      if (this.admission) await launch.port.setAdmission(this.admission);
    } catch (err) {
      await endLaunch(this.ctx, launch.name, 0).catch(() => undefined); // best effort: the original failure is rethrown below, and a leftover pod is adopted or ended next time
      throw err;
    }
    options.log.info(`session ${this.sessionId}: pod ${launch.name}, epoch ${epoch}, on ${launch.url}`);
    return launch;
  }

  /** What the pod's `session-serve` reads from its Secret: no path of this machine, no host-only setting. */
  private launchDocument(epoch: number, token: string): LaunchDocument {
    const { options } = this;
    const given = options.credentials ? options.credentials.runnerEnv(this.sessionId, options.config.runners.env) : options.config.runners.env;
    const env: Record<string, string> = {};
    // The proxy's loopback address is the host's own: a pod reaches it by PINCER_K8S_PROXY_URL (only that prefix —
    // an upstream on this machine's loopback, which runners are told of, is not the proxy).
    const loopback = options.credentials?.port ? `http://127.0.0.1:${options.credentials.port()}` : undefined;
    const relay = options.settings.proxyUrl?.replace(/\/$/, '');
    for (const [name, value] of Object.entries(given)) {
      if (value === undefined || isHostOnlyVariable(name)) continue;
      env[name] = relay && loopback && (value === loopback || value.startsWith(`${loopback}/`)) ? relay + value.slice(loopback.length) : value;
    }
    return {
      sessionId: this.sessionId,
      epoch,
      token,
      listen: `0.0.0.0:${options.settings.endpointPort}`,
      orphanMs: options.orphanMs,
      sweep: options.config.sweep as unknown as Record<string, unknown>,
      // The pod is the sandbox: its runners are plain processes in it.
      runners: { ...options.config.runners, kind: 'process', env } as unknown as Record<string, unknown>,
      launch: { groupDir: POD_PATHS.group, globalDir: POD_PATHS.global, logFile: POD_PATHS.logFile },
    };
  }

  /** The pod stopped answering: fence it off (a new epoch for the next launch), delete it at once, start again. */
  private lose(launch: PodLaunch, why: string): void {
    if (this.current !== launch) return;
    this.current = null;
    this.wanted = true; // whatever it had open is answered by the next launch
    this.stopHeartbeat();
    this.options.log.warn(
      `session ${this.sessionId}: pod ${launch.name} (epoch ${launch.epoch}) lost (${why}); deleting it with grace 0 and starting a new launch`,
    );
    const previous = this.ending;
    this.ending = (async () => {
      await previous.catch(() => undefined); // the previous ending logged its own failure
      await launch.port.close();
      this.options.credentials?.revoke(this.sessionId);
      await endLaunch(this.ctx, launch.name, 0).catch((err: unknown) =>
        this.options.log.warn(`session ${this.sessionId}: deleting pod ${launch.name}: ${errorMessage(err)}`),
      );
    })();
    for (const wake of this.wakers) wake();
  }

  /** Drain the pod (the runner finishes, what is open is handed back), delete it, keep the claim; wake for what is due. */
  private async scaleToZero(why: string): Promise<DrainResult> {
    const launch = this.current!;
    this.current = null;
    this.stopHeartbeat();
    let result: DrainResult = { nextDueAt: this.known.nextDueAt, providerSessionId: this.known.providerSessionId };
    const previous = this.ending;
    let resolveEnded!: () => void;
    this.ending = new Promise<void>((resolve) => (resolveEnded = resolve));
    try {
      await previous.catch(() => undefined); // the previous ending logged its own failure
      result = await launch.port.drain();
      this.known = {
        ...this.known,
        runner: null,
        runnerPid: null,
        nextDueAt: result.nextDueAt,
        providerSessionId: result.providerSessionId ?? this.known.providerSessionId,
      };
    } catch (err) {
      this.options.log.warn(`session ${this.sessionId}: draining pod ${launch.name}: ${errorMessage(err)}`);
      this.wanted = true; // it did not say what it had open: the next launch looks
    } finally {
      await launch.port.close();
      this.options.credentials?.revoke(this.sessionId);
      await endLaunch(this.ctx, launch.name).catch((err: unknown) =>
        this.options.log.warn(`session ${this.sessionId}: deleting pod ${launch.name}: ${errorMessage(err)}`),
      );
      resolveEnded();
    }
    this.options.log.info(
      `session ${this.sessionId}: pod ${launch.name} drained and deleted (${why}); claim kept${result.nextDueAt ? `, next due ${result.nextDueAt}` : ''}`,
    );
    this.scheduleWake(result.nextDueAt);
    return result;
  }

  /** After a pod's answer: idle long enough with nothing open, due soon or undelivered, and nothing in flight → zero. */
  private noteActivity(snapshot: SessionSnapshot): void {
    const { state } = snapshot;
    const now = Date.now();
    const dueSoon = state.nextDueAt !== null && Date.parse(state.nextDueAt) - now < this.options.settings.idleMs;
    const quiet =
      state.open === 0 &&
      state.undelivered === 0 &&
      state.runner?.state !== 'busy' &&
      snapshot.outbound.length === 0 &&
      snapshot.events.length === 0 &&
      !dueSoon;
    if (!quiet || this.inFlight > 0 || this.starting) {
      this.lastActiveAt = now;
      return;
    }
    if (this.current && now - this.lastActiveAt >= this.options.settings.idleMs) {
      void this.scaleToZero(`idle for ${now - this.lastActiveAt} ms`).catch((err: unknown) =>
        this.options.log.warn(`session ${this.sessionId}: ${errorMessage(err)}`),
      );
    }
  }

  private scheduleWake(at: string | null): void {
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    if (!at || this.closed) return;
    const delay = Math.max(0, Date.parse(at) - Date.now());
    if (!Number.isFinite(delay)) return;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = null;
        if (Date.parse(at) > Date.now()) return this.scheduleWake(at); // the timer's limit was shorter than the wait
        this.options.log.info(`session ${this.sessionId}: something falls due at ${at}; starting its pod`);
        this.wanted = true;
        for (const wake of this.wakers) wake();
      },
      Math.min(delay, MAX_TIMER_MS),
    );
    this.wakeTimer.unref();
  }

  private waitForWork(waitMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      signal?.addEventListener('abort', done, { once: true });
      this.wakers.add(done);
      if (signal?.aborted || this.closed) done();
    });
  }

  /**
   * Follow the launch's pod: the pod watch says at once when it failed, ended or is deleted (by anyone); its health
   * endpoint is asked every `heartbeatMs`, and two misses in a row mean it is lost — a dead node reports nothing, so
   * only the missing answers tell.
   */
  private startHeartbeat(launch: PodLaunch): void {
    this.stopHeartbeat();
    this.misses = 0;
    this.unwatchPod = this.options.cluster.pods.on(launch.name, (pod) => {
      if (this.current !== launch) return;
      if (!pod) return this.lose(launch, 'its pod was deleted');
      if (pod.metadata?.deletionTimestamp) return this.lose(launch, 'its pod is being deleted');
      const phase = pod.status?.phase;
      if (phase === 'Failed' || phase === 'Succeeded') {
        const code = pod.status?.containerStatuses?.[0]?.state?.terminated?.exitCode;
        this.lose(launch, `its pod ${phase === 'Failed' ? 'failed' : 'ended'}${code !== undefined ? ` (exit ${code})` : ''}, as the pod watch says`);
      }
    });
    const every = this.options.settings.heartbeatMs;
    const beat = async (): Promise<void> => {
      if (this.current !== launch) return;
      try {
        const res = await fetch(`${launch.url}/v1/health`, { signal: AbortSignal.timeout(every) });
        const epoch = Number(res.headers.get('x-pincer-epoch'));
        if (!res.ok || epoch !== launch.epoch) throw new Error(res.ok ? `answered for epoch ${epoch}` : `HTTP ${res.status}`);
        await res.body?.cancel();
        this.misses = 0;
      } catch (err) {
        this.misses += 1;
        if (this.misses >= HEARTBEAT_MISSES && this.current === launch) this.lose(launch, `${this.misses} health checks missed: ${errorMessage(err)}`);
      }
    };
    this.heartbeat = setInterval(() => void beat(), every);
    this.heartbeat.unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
    this.unwatchPod?.();
    this.unwatchPod = null;
  }
}
