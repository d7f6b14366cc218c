import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import readline from 'node:readline';
import type { ConfigFile } from '../../db/config-file.js';
import { Backoff } from '../../shared/backoff.js';
import { lockedCommand } from '../../container/handle.js';
import { CLI_ENTRY } from '../../shared/cli-entry.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { RunnerCredentials, RunnerTraceRelay } from './runners.js';
import type { HostConfig } from '../types.js';
import type { EngineLaunch } from './engine.js';
import { isSessionPortError, SessionPortError, type Admission, type DrainResult, type SessionSnapshot } from './port.js';
import { ForwardingSessionPort } from './forwarding-port.js';
import { RemoteSessionPort } from './remote-port.js';
import type { LaunchDocument, ReadyLine } from './serve-protocol.js';

/** Tell the chat once a launch has failed this many times in a row. */
const FAILURE_NOTICE_AT = 3;

export interface ServedSessionOptions {
  session: { id: string; folder: string };
  config: Pick<HostConfig, 'runners' | 'sweep'>;
  launch: EngineLaunch;
  /** the next launch epoch of the session (stored by the host before the launch starts). */
  nextEpoch(): number;
  credentials?: RunnerCredentials;
  /** the host's OTLP relay, when tracing is on and runners are sandboxed: the served session's runners export to it. */
  traceRelay?: RunnerTraceRelay;
  /** where files the agent sent are copied for the channels. */
  filesDir: string;
  /** `PINCER_SESSION_ORPHAN_MS`. */
  orphanMs: number;
  /**
   * The session's serve lock, under the host's home: a launch waits (up to a minute) until the previous one — of this
   * host, or of a host that died and left its process draining — has ended, so one session never has two writers.
   */
  lockFile?: string;
  log: Logger;
  /** a launch keeps failing: the chat is told (once every `FAILURE_NOTICE_AT` failures in a row). */
  onLaunchFailures(failures: number, why: string): void;
}

interface Launch {
  child: ChildProcess;
  port: RemoteSessionPort;
  exited: Promise<void>;
}

/**
 * A session served by its own `pincer session-serve` process on this machine (`PINCER_RUNNER=session-serve`): the
 * remote port over loopback HTTP, launched on first use and again — with a new epoch and bearer, after a back-off —
 * whenever the process is gone or stops answering. The process dies with the host (its stdin is the lifeline).
 */
export class ServedSessionPort extends ForwardingSessionPort {
  private current: Launch | null = null;
  private starting: Promise<Launch> | null = null;
  private readonly backoff: Backoff;
  private nextStartAt = 0;
  private closed = false;
  /** the end of a launch that stopped answering: the next one starts only after it (never two writers). */
  private ending: Promise<void> = Promise.resolve();
  /** the launch the last `sync` went to: a new one counts its versions from 0. */
  private syncedWith: RemoteSessionPort | null = null;
  /** the last configuration published (and its secrets' values) and admission, given to each new launch. */
  private config: ConfigFile | null = null;
  private secrets: Record<string, string> | undefined;
  private admission: Admission | null = null;

  constructor(private readonly options: ServedSessionOptions) {
    super();
    this.backoff = new Backoff(options.config.runners.backoffBaseMs, options.config.runners.backoffMaxMs);
  }

  get sessionId(): string {
    return this.options.session.id;
  }

  /** The session-serve process's pid, while one runs. */
  get pid(): number | undefined {
    return this.current?.child.pid;
  }

  protected forward<T>(call: (port: RemoteSessionPort) => Promise<T>): Promise<T> {
    return this.use((p) => call(p));
  }
  sync(afterVersion: number, afterSeq: number, waitMs: number, signal?: AbortSignal): Promise<SessionSnapshot> {
    // A new launch counts its versions from 0: ask a new process for everything it has.
    return this.use(
      (p, fresh) => p.sync(fresh ? 0 : afterVersion, afterSeq, waitMs, signal),
      (p) => p !== this.syncedWith,
      (p) => (this.syncedWith = p),
      signal,
    );
  }
  publishConfig(config: ConfigFile, secrets?: Record<string, string>): Promise<void> {
    this.config = config;
    this.secrets = secrets;
    return this.use((p) => p.publishConfig(config, secrets));
  }
  setAdmission(admission: Admission): Promise<void> {
    this.admission = admission;
    return this.use((p) => p.setAdmission(admission));
  }
  drain(): Promise<DrainResult> {
    return this.use((p) => p.drain());
  }

  /** SIGTERM to the process (it drains: the runner finishes its query), SIGKILL after the grace. */
  async close(): Promise<void> {
    this.closed = true;
    const launch = this.current ?? (await this.starting?.catch(() => null)) ?? null; // a launch that failed was logged when it failed
    this.current = null;
    if (!launch) return;
    await launch.port.close();
    await stopChild(launch, this.options.config.runners.stopGraceMs + 5000);
    this.options.credentials?.revoke(this.sessionId);
  }

  /** Run `call` on the current launch (launching one if needed); a launch that does not answer is ended. */
  private async use<T>(
    call: (port: RemoteSessionPort, fresh: boolean) => Promise<T>,
    isFresh: (port: RemoteSessionPort) => boolean = () => false,
    answered: (port: RemoteSessionPort) => void = () => undefined,
    signal?: AbortSignal,
  ): Promise<T> {
    const launch = await this.launched();
    try {
      const result = await call(launch.port, isFresh(launch.port));
      answered(launch.port);
      return result;
    } catch (err) {
      // A wait the caller ended (the host stops) says nothing about the launch.
      if (isSessionPortError(err) && !signal?.aborted && !this.closed && this.current === launch) {
        this.options.log.warn(
          `session ${this.sessionId}: session-serve (pid ${launch.child.pid}, epoch ${launch.port.epoch}) ${err.reason}: ${err.message}; relaunching`,
        );
        this.current = null;
        this.ending = stopChild(launch, 2000);
      }
      throw err;
    }
  }

  private launched(): Promise<Launch> {
    if (this.closed) return Promise.reject(new SessionPortError('unavailable', `session ${this.sessionId} is closed`));
    if (this.current && this.current.child.exitCode === null && this.current.child.signalCode === null) return Promise.resolve(this.current);
    this.current = null;
    if (Date.now() < this.nextStartAt) {
      return Promise.reject(new SessionPortError('unavailable', `session ${this.sessionId}: next launch in ${this.nextStartAt - Date.now()} ms`));
    }
    this.starting ??= this.launch().then(
      (launch) => {
        this.starting = null;
        this.backoff.succeed();
        this.current = launch;
        return launch;
      },
      (err: unknown) => {
        this.starting = null;
        const { delayMs, failures } = this.backoff.fail(errorMessage(err));
        this.nextStartAt = Date.now() + delayMs;
        this.options.log.warn(
          `session ${this.sessionId}: session-serve could not be launched (${failures} in a row, next try in ${delayMs} ms): ${errorMessage(err)}`,
        );
        if (failures % FAILURE_NOTICE_AT === 0) this.options.onLaunchFailures(failures, errorMessage(err));
        throw new SessionPortError('unavailable', `session ${this.sessionId} could not be launched: ${errorMessage(err)}`, { cause: err });
      },
    );
    return this.starting;
  }

  private async launch(): Promise<Launch> {
    await this.ending;
    const { options } = this;
    const epoch = options.nextEpoch();
    const token = randomBytes(24).toString('base64url');
    const env = options.credentials ? options.credentials.runnerEnv(this.sessionId, options.config.runners.env) : options.config.runners.env;
    const doc: LaunchDocument = {
      sessionId: this.sessionId,
      epoch,
      token,
      listen: '127.0.0.1:0',
      orphanMs: options.orphanMs,
      sweep: options.config.sweep as unknown as Record<string, unknown>,
      runners: { ...options.config.runners, env } as unknown as Record<string, unknown>,
      launch: options.launch,
      ...(options.credentials?.socketPath(this.sessionId) ? { credentialProxySocket: options.credentials.socketPath(this.sessionId) } : {}),
      ...(options.traceRelay?.socketPath() ? { traceRelay: { socket: options.traceRelay.socketPath()!, port: options.traceRelay.port() } } : {}),
    };
    const log = fs.openSync(options.launch.logFile, 'a', 0o600);
    let child: ChildProcess;
    try {
      // Nothing secret on the command line or in the environment: the document goes through stdin.
      const command = lockedCommand(options.lockFile, process.execPath, [CLI_ENTRY, 'session-serve', options.session.folder]);
      child = spawn(command.file, command.args, {
        stdio: ['pipe', 'pipe', log],
        env: serveEnvironment(),
      });
    } finally {
      fs.closeSync(log);
    }
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.stdin!.on('error', () => undefined); // the process died; its exit says so
    child.stdin!.write(`${JSON.stringify(doc)}\n`);
    const ready = await readyLine(child, options.config.runners.startTimeoutMs);
    const port = new RemoteSessionPort({ sessionId: this.sessionId, url: ready.url, token, epoch, filesDir: options.filesDir });
    if (this.config) await port.publishConfig(this.config, this.secrets);
    if (this.admission) await port.setAdmission(this.admission);
    options.log.info(`session ${this.sessionId}: session-serve pid ${child.pid}, epoch ${epoch}, on ${ready.url}`);
    return { child, port, exited };
  }
}

/** What a session-serve process inherits: its PATH, home and locale; everything else comes in the launch document. */
function serveEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TZ', 'PINCER_LOG_LEVEL', 'PINCER_SESSION_REFUSE_FS'])
    if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

function readyLine(child: ChildProcess, timeoutMs: number): Promise<ReadyLine> {
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout! });
    const timer = setTimeout(() => done(new Error(`no ready line within ${timeoutMs} ms`)), timeoutMs);
    const onExit = (code: number | null, signal: string | null): void =>
      done(new Error(`exited (${code ?? signal}) before it served; see the session's runner log`));
    const done = (err: Error | null, ready?: ReadyLine): void => {
      clearTimeout(timer);
      child.off('exit', onExit);
      lines.close();
      if (err) {
        child.kill('SIGKILL');
        reject(err);
      } else resolve(ready!);
    };
    child.once('exit', onExit);
    lines.once('line', (line) => {
      try {
        const parsed = JSON.parse(line) as ReadyLine;
        if (parsed.ready !== true || typeof parsed.url !== 'string') throw new Error('not a ready line');
        done(null, parsed);
      } catch {
        // the error names the line that was not a ready line
        done(new Error(`printed "${line.slice(0, 200)}" instead of its ready line`));
      }
    });
  });
}

async function stopChild(launch: Launch, graceMs: number): Promise<void> {
  const { child } = launch;
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await launch.exited;
  clearTimeout(timer);
}
