import fs from 'node:fs';
import path from 'node:path';
import type { RunnerState } from '../../db/types.js';
import type { LimitEvents } from '../../container/cgroup.js';
import { launcherFor, type LaunchRunner, type StartedRunner } from '../launchers.js';
import { containerNameFor, dockerCliEnvironment, removeRunnerContainers } from '../../container/index.js';
import { readRunnerState } from '../../db/state.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { SessionRecord } from '../central-db/types.js';
import { isProcessAlive } from '../home-lock.js';
import { openSessionDbSafely } from './slot.js';
import { isUntrustedPathError } from '../untrusted-files.js';
import type { HostConfig } from '../types.js';
import { setting } from '../../shared/settings.js';
import { RunnerAdmission, runnerLimit } from '../runner-admission.js';

/**
 * Runner lifecycle: at most one runner per session, started as a child process when the session has due work,
 * stopped after an idle timeout (never while `busy` or `waiting_user`), killed when its heartbeat goes stale, and
 * restarted after an unexpected exit only after an exponential back-off, so a runner that crashes on start is never
 * restarted in a tight loop. Host-wide, at most as many runners are alive as admission allows (runner-admission.ts):
 * a session over the cap waits in line, and an idle runner is stopped to make room for it.
 */
export interface RunnerLaunch {
  sessionId: string;
  folder: string;
  provider: string;
  timezone: string;
  /** the group's folder and the shared global folder (mounted into a container). */
  groupDir: string;
  globalDir: string;
  /** where the runner's stderr goes: under the host's home, never in the session folder the agent writes. */
  logFile: string;
  /** the session's launch lock, under the host's home (`LaunchOptions.lockFile`). */
  lockFile?: string;
  /** values of the secrets the session's MCP servers refer to (`LaunchOptions.secrets`: stdin, never the environment). */
  secrets?: Record<string, string>;
}

export interface RunnerExit {
  sessionId: string;
  pid: number;
  code: number | string;
  /** the host asked it to stop (idle, shutdown); anything else is unexpected. */
  requested: boolean;
  /** consecutive unexpected exits, 0 after a requested one. */
  crashes: number;
  /** when the next start is allowed (ms since epoch). */
  nextStartAt: number;
  /** what its limits stopped while it ran (bubblewrap runners with a cgroup), if known. */
  limits?: LimitEvents;
}

interface Entry {
  runner: StartedRunner;
  /** the local process's pid (for a container: the docker client's). */
  pid: number;
  startedAt: number;
  stopping: boolean;
  /** since when the host has seen it idle with nothing due (a runner to stop first when others wait for room). */
  idleSince?: number;
  exited: Promise<void>;
  /** whether a `runner_state` row was written by this runner. */
  owns(state: RunnerState): boolean;
}

export type LivenessVerdict = 'ok' | 'idle-stop' | 'heartbeat-kill' | 'turn-limit' | 'none';

/** What the credential proxy does for runners (src/host/credential-proxy.ts): the seam the supervisor needs. */
export interface RunnerCredentials {
  /** the runner's environment with placeholders for real keys (a new placeholder per start). */
  runnerEnv(sessionId: string, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** the session's placeholder stops working. */
  revoke(sessionId: string): void;
  /** the session's own Unix socket of the proxy, for sandboxes with their own network (after runnerEnv). */
  socketPath(sessionId: string): string | undefined;
  /** the proxy's loopback port, when it is the host's own: the base URLs runnerEnv gives are `http://127.0.0.1:<port>/…`. */
  port?(): number;
}

/** What the OTLP relay gives runners: the seam the supervisor needs. */
export interface RunnerTraceRelay {
  /** the relay's Unix socket (bound into sandboxes); undefined before it started. */
  socketPath(): string | undefined;
  /** its loopback port: a sandbox's forward of the socket listens on the same. */
  port(): number;
}

export class RunnerSupervisor {
  private readonly entries = new Map<string, Entry>();
  private readonly crashes = new Map<string, { count: number; nextStartAt: number }>();
  /** per session: the batch the runner is busy with (its first message id) and since when the host has seen it busy. */
  private readonly busy = new Map<string, { batch: string; since: number }>();
  /** per idle session with a message due: since when the host has seen it due (the runner must claim it in time). */
  private readonly dueSeen = new Map<string, number>();
  /** how many runners may be alive at once, and who waits for room. */
  readonly admission: RunnerAdmission;

  constructor(
    private readonly config: HostConfig['runners'],
    private readonly log: Logger,
    private readonly onExit: (exit: RunnerExit) => void,
    /** how runners are started (default: by PINCER_RUNNER). */
    private readonly launch: LaunchRunner = launcherFor(
      config,
      (line) => log.warn(line),
      (line) => log.info(line),
    ),
    /** placeholder keys instead of real ones, when the host runs a credential proxy. */
    private readonly credentials?: RunnerCredentials,
    /** where a sandbox sends its spans, when the host runs an OTLP relay (src/host/trace-relay.ts). */
    private readonly traceRelay?: RunnerTraceRelay,
    /** the host's clock (`HostOptions.clock`) for its crash back-off; what runners write is read against the real time */
    private readonly now: () => number = Date.now,
  ) {
    this.admission = new RunnerAdmission(runnerLimit(config.maxRunners));
  }

  isRunning(sessionId: string): boolean {
    return this.entries.has(sessionId);
  }

  pid(sessionId: string): number | undefined {
    return this.entries.get(sessionId)?.pid;
  }

  /** The session's `runner_state` if its live runner wrote it (not a stale row of an earlier runner). */
  liveState(sessionId: string, state: RunnerState | undefined): RunnerState | undefined {
    const entry = this.entries.get(sessionId);
    return entry && state && entry.owns(state) ? state : undefined;
  }

  /**
   * The session's crash back-off is over (a new model-runtime generation of its group: a runner that exited for want
   * of a key or a runtime may start with it at once). Returns whether there was one.
   */
  forgetCrashes(sessionId: string): boolean {
    return this.crashes.delete(sessionId);
  }

  /** Milliseconds until a start is allowed (0: now). */
  backoffRemainingMs(sessionId: string): number {
    const crash = this.crashes.get(sessionId);
    return crash ? Math.max(0, crash.nextStartAt - this.now()) : 0;
  }

  /**
   * Start the session's runner unless one runs, the back-off forbids it, or the host has no room for another: then the
   * session waits in line (`waitingSince`), an idle runner is stopped to make room, and `wake` is called when its turn
   * may have come. Returns whether one was started.
   */
  start(launch: RunnerLaunch, wake: () => void = () => undefined): boolean {
    if (this.entries.has(launch.sessionId) || this.backoffRemainingMs(launch.sessionId) > 0) return false;
    const waited = this.admission.waitingSince(launch.sessionId) !== undefined;
    if (!this.admission.tryStart(launch.sessionId, launch.provider, wake)) {
      if (!waited) {
        const queue = this.admission.queue();
        this.log.info(
          `session ${launch.sessionId} waits for room for its runner: ${this.entries.size} alive, ${queue.length} waiting; ${this.admission.limit.describe}`,
        );
      }
      this.makeRoom();
      return false;
    }
    let runner: StartedRunner;
    try {
      runner = this.launch({
        workspace: launch.folder,
        groupDir: launch.groupDir,
        globalDir: launch.globalDir,
        env: this.runnerEnv(launch),
        credentialProxySocket: this.credentials?.socketPath(launch.sessionId),
        ...this.traceRelayOptions(),
        logFile: launch.logFile,
        lockFile: launch.lockFile,
        name: launch.sessionId,
        ...(launch.secrets ? { secrets: launch.secrets } : {}),
      });
    } catch (err) {
      this.admission.release(launch.sessionId);
      this.credentials?.revoke(launch.sessionId);
      this.recordCrash(launch.sessionId);
      this.log.warn(`runner for ${launch.sessionId} could not be launched: ${errorMessage(err)}`);
      return false;
    }
    if (runner.pid === undefined) {
      this.admission.release(launch.sessionId);
      this.credentials?.revoke(launch.sessionId);
      // spawn failed synchronously (e.g. EAGAIN, no docker binary): count it as a crash so the next try waits.
      this.recordCrash(launch.sessionId);
      this.log.warn(`runner for ${launch.sessionId} could not be spawned`);
      return false;
    }
    const startedAt = Date.now(); // compared with the runner's own startedAt: the real time
    const pid = runner.pid;
    const entry: Entry = {
      runner,
      pid,
      startedAt,
      stopping: false,
      // the runner's own end, not its local process's: a Docker CLI that died leaves its container running until
      // the launcher has removed it, and until then its rows are still the runner's (never swept back to pending)
      exited: runner.exited.then(() => undefined),
      // A sandboxed runner writes a pid of its own namespace: it is ours if it started after we launched it.
      owns: runner.kind === 'process' ? (state) => state.pid === pid : (state) => Date.parse(state.startedAt) >= startedAt - 1000,
    };
    void runner.exited.then((code) => this.handleExit(launch.sessionId, entry, code));
    this.entries.set(launch.sessionId, entry);
    this.log.info(
      `runner started for ${launch.sessionId}: pid ${pid}, provider ${launch.provider}${runner.containerName ? `, container ${runner.containerName}` : ''}`,
    );
    return true;
  }

  /**
   * Judge a running runner from its `runner_state` row: stale heartbeat → kill; idle past the timeout with nothing
   * due → stop. `lastActivityAt` is the host's own last write to the session (so a message just accepted counts).
   */
  check(sessionId: string, state: RunnerState | undefined, hasDue: boolean, lastActivityAt: number): LivenessVerdict {
    const entry = this.entries.get(sessionId);
    if (!entry || entry.stopping) return 'none';
    const now = Date.now(); // compared with the runner's heartbeats: the real time
    const ours = state !== undefined && entry.owns(state);
    // An idle runner does not beat (idle costs nothing): its process is watched for its exit, and it must claim what
    // is due within the heartbeat timeout of seeing it due — a frozen idle runner is found as soon as it has work.
    const idle = ours && state.state === 'idle';
    if (!idle || !hasDue) this.dueSeen.delete(sessionId);
    if (!idle || hasDue) entry.idleSince = undefined;
    else if (!this.dueSeen.has(sessionId)) this.dueSeen.set(sessionId, now);
    // Until it has written its state, a runner is starting (slow under load): it gets the start timeout instead.
    const lastSign = ours ? Math.max(Date.parse(state.heartbeatAt), Date.parse(state.updatedAt)) : entry.startedAt;
    const since = idle ? (hasDue ? Math.max(lastSign, this.dueSeen.get(sessionId)!) : now) : lastSign;
    const limit = ours ? this.config.heartbeatTimeoutMs : Math.max(this.config.startTimeoutMs, this.config.heartbeatTimeoutMs);
    if (now - since > limit) {
      this.log.warn(
        !ours
          ? `runner ${entry.pid} for ${sessionId}: not started after ${now - since} ms; killing it`
          : idle
            ? `runner ${entry.pid} for ${sessionId}: idle with a message due for ${now - since} ms; killing it`
            : `runner ${entry.pid} for ${sessionId}: no heartbeat for ${now - since} ms; killing it`,
      );
      this.dueSeen.delete(sessionId);
      void entry.runner.kill(); // an unrequested end: recovered and backed off like a crash
      return 'heartbeat-kill';
    }
    if (ours && this.crashes.has(sessionId) && state.state !== 'starting') this.crashes.delete(sessionId);
    if (ours && this.overTurnLimit(sessionId, state, now)) {
      this.log.warn(`runner ${entry.pid} for ${sessionId}: its query ran past the turn limit (${this.config.turnLimitMs} ms); killing it`);
      void entry.runner.kill();
      return 'turn-limit';
    }
    if (ours && state.state === 'idle' && !hasDue) {
      entry.idleSince ??= now;
      // sessions wait for room: the longest idle runners go first (this one, or another)
      this.makeRoom();
      if (entry.stopping) return 'idle-stop';
      const idleSince = Math.max(Date.parse(state.updatedAt), lastActivityAt);
      if (now - idleSince > this.config.idleTimeoutMs) {
        this.log.info(`runner ${entry.pid} for ${sessionId} idle for ${now - idleSince} ms; stopping it`);
        void this.stop(sessionId);
        return 'idle-stop';
      }
    }
    return 'ok';
  }

  /**
   * Busy with the same batch for longer than the turn limit (a provider that never answers). Waiting for the user's
   * answer to a question does not count: that wait has its own timeout.
   */
  private overTurnLimit(sessionId: string, state: RunnerState, now: number): boolean {
    const batch = state.state === 'busy' ? state.batchIds[0] : undefined;
    const seen = this.busy.get(sessionId);
    if (!batch) {
      this.busy.delete(sessionId);
      return false;
    }
    if (!seen || seen.batch !== batch) {
      this.busy.set(sessionId, { batch, since: Math.min(now, Date.parse(state.updatedAt) || now) });
      return false;
    }
    if (now - seen.since <= this.config.turnLimitMs) return false;
    this.busy.delete(sessionId);
    return true;
  }

  /** The session no longer wants a runner now (nothing due, draining, over budget): out of the line for room. */
  withdraw(sessionId: string): void {
    this.admission.withdraw(sessionId);
  }

  /** Since when (epoch ms) the session waits for room for its runner, if it does. */
  waitingSince(sessionId: string): number | undefined {
    return this.admission.waitingSince(sessionId);
  }

  /** Runners alive now (stopping ones included: they are alive until they exit). */
  get alive(): number {
    return this.entries.size;
  }

  /** Stop idle runners (longest idle first) until the first in line would fit once they are gone. */
  private makeRoom(): void {
    while (this.admission.shortfall(this.freeing()) > 0) {
      let victim: [string, Entry] | undefined;
      for (const pair of this.entries) {
        const since = pair[1].idleSince;
        if (!pair[1].stopping && since !== undefined && (!victim || since < victim[1].idleSince!)) victim = pair;
      }
      if (!victim) return;
      this.log.info(`runner ${victim[1].pid} for ${victim[0]} idle; stopping it to make room for ${this.admission.queue().length} waiting`);
      void this.stop(victim[0]);
    }
  }

  /** Units of the runners already stopping (their room comes when they exit). */
  private freeing(): number {
    let units = 0;
    for (const [id, entry] of this.entries) if (entry.stopping) units += this.admission.costOf(id);
    return units;
  }

  /** Milliseconds until `check` would stop an idle runner (for the session loop's next wake-up). */
  idleDeadlineMs(state: RunnerState | undefined, lastActivityAt: number): number | undefined {
    if (!state || state.state !== 'idle') return undefined;
    const idleSince = Math.max(Date.parse(state.updatedAt), lastActivityAt);
    return Math.max(0, idleSince + this.config.idleTimeoutMs - Date.now()) + 1; // the runner's own times
  }

  /** SIGTERM (the runner finishes its query within its grace), SIGKILL after the host's grace. */
  async stop(sessionId: string): Promise<void> {
    const entry = this.entries.get(sessionId);
    if (!entry) return;
    entry.stopping = true;
    await entry.runner.stop(this.config.stopGraceMs + 2000);
    await entry.exited;
  }

  /** End the runner now (SIGKILL) and wait for it: its database was deleted or replaced, so its work is lost anyway. */
  async kill(sessionId: string): Promise<void> {
    const entry = this.entries.get(sessionId);
    if (!entry) return;
    entry.stopping = true;
    await entry.runner.kill();
    await entry.exited;
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.entries.keys()].map((id) => this.stop(id)));
    await this.launch.close?.();
  }

  private traceRelayOptions(): { traceRelay?: { socket: string; port: number } } {
    const socket = this.traceRelay?.socketPath();
    return socket ? { traceRelay: { socket, port: this.traceRelay!.port() } } : {};
  }

  private runnerEnv(launch: RunnerLaunch): NodeJS.ProcessEnv {
    const env = { ...this.config.env, AGENT_PROVIDER: launch.provider, TZ: launch.timezone };
    const given = this.credentials ? this.credentials.runnerEnv(launch.sessionId, env) : env;
    // the launcher's own settings (PINCER_CONTAINER_*, DOCKER_HOST) stay with the launcher
    return Object.fromEntries(Object.entries(given).filter(([name]) => setting(name)?.reader !== 'launcher'));
  }

  private handleExit(sessionId: string, entry: Entry, code: number | string): void {
    if (this.entries.get(sessionId) === entry) {
      this.entries.delete(sessionId);
      this.dueSeen.delete(sessionId);
      this.credentials?.revoke(sessionId); // its placeholder dies with it
      this.admission.release(sessionId);
    }
    let crashes = 0;
    let nextStartAt = this.now();
    if (!entry.stopping) {
      const crash = this.recordCrash(sessionId);
      crashes = crash.count;
      nextStartAt = crash.nextStartAt;
      this.log.warn(`runner ${entry.pid} for ${sessionId} exited unexpectedly (${code}); crash ${crashes} in a row, next start in ${crash.delayMs} ms`);
    } else {
      this.log.info(`runner ${entry.pid} for ${sessionId} stopped (${code})`);
    }
    const limits = entry.runner.limitsHit?.();
    this.onExit({ sessionId, pid: entry.pid, code, requested: entry.stopping, crashes, nextStartAt, ...(limits ? { limits } : {}) });
  }

  private recordCrash(sessionId: string): { count: number; nextStartAt: number; delayMs: number } {
    const count = (this.crashes.get(sessionId)?.count ?? 0) + 1;
    const delayMs = Math.min(this.config.backoffMaxMs, this.config.backoffBaseMs * 2 ** (count - 1));
    const crash = { count, nextStartAt: this.now() + delayMs };
    this.crashes.set(sessionId, crash);
    return { ...crash, delayMs };
  }
}

/**
 * Runners left by a host that died: stop them before this host starts its own, so a session never has two. A
 * process runner counts when its `runner_state` has a live pid that /proc shows is this session's runner, and (unless
 * idle: an idle runner does not beat) a fresh heartbeat; container runners are found by name.
 */
export async function stopOrphanRunners(sessions: SessionRecord[], config: HostConfig['runners'], log: Logger): Promise<void> {
  if (config.kind === 'docker') {
    try {
      await removeRunnerContainers(
        sessions.map((session) => containerNameFor(session.id)),
        dockerCliEnvironment(config.env),
      );
    } catch (err) {
      log.warn(`cannot remove runner containers left by an earlier host: ${errorMessage(err)}`);
    }
    return;
  }
  for (const session of sessions) {
    let state: RunnerState | undefined;
    try {
      const db = openSessionDbSafely(session.folder);
      state = readRunnerState(db);
      db.close();
    } catch (err) {
      // an unsafe session.db is quarantined (and logged) by the host right after this
      if (!isUntrustedPathError(err)) log.warn(`session ${session.id}: ${errorMessage(err)}`);
      continue;
    }
    // an idle runner does not beat: its row is as old as its last turn (the /proc check below still vouches for the pid)
    const lastSign = state ? Math.max(Date.parse(state.heartbeatAt), Date.parse(state.updatedAt)) : 0;
    if (!state || (state.state !== 'idle' && Date.now() - lastSign > config.heartbeatTimeoutMs)) continue;
    const pid = state.pid;
    // The row is the agent's to write: signal a pid only when it is this session's runner process. A sandboxed
    // runner's pid is its namespace's and never matches: its launch lock makes the next start wait for it instead.
    if (!isProcessAlive(pid) || !isRunnerOf(pid, session.folder)) continue;
    // A runner whose host died sees its stdin close and is already stopping (finishing its query): wait for it all
    // the same, so that the session never has two runners at once.
    if (state.state === 'stopping') log.warn(`waiting for runner ${pid} of ${session.id}, left by an earlier host, to stop`);
    else {
      log.warn(`stopping runner ${pid} of ${session.id} left by an earlier host`);
      process.kill(pid, 'SIGTERM');
    }
    const deadline = Date.now() + config.stopGraceMs + 2000;
    while (isProcessAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
  }
}

/**
 * Whether `pid` is a Pincer runner of the session in `folder`: its command line ends in `runner` and it was started
 * with that session as its PINCER_WORKSPACE (as the host starts process runners). Read from /proc, not from the session.
 */
export function isRunnerOf(pid: number, folder: string): boolean {
  try {
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    if (args.at(-1) !== 'runner') return false;
    const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return environ.includes(`PINCER_WORKSPACE=${folder}`) || environ.includes(`PINCER_WORKSPACE=${path.resolve(folder)}`);
  } catch {
    return false; // gone, or not ours to read
  }
}
