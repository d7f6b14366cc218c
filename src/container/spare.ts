import { spawn, type ChildProcess } from 'node:child_process';
import { SESSION_NODE_FLAGS } from '../shared/cli-entry.js';
import { LIFELINE_ENV } from './handle.js';

/** After an assignment, the next spare starts this much later: not on the cores the assigned runner's turn needs. */
const REFILL_MS = 1000;
/** Spares that die before they are given a session, in a row, before the host stops keeping any. */
const MAX_FAILURES = 3;

/**
 * Runner processes started without a session (`pincer runner` with PINCER_SPARE=1, src/runner/spare.ts), for a
 * process launcher: each has loaded its code and waits on stdin for a session, so a session that needs a runner skips
 * the process's start (docs/performance.md, "The warm spare"). Started with the host's runner environment; the
 * session's own comes with the assignment. Never counted against PINCER_MAX_RUNNERS until given a session.
 */
export class SpareRunners {
  private readonly ready: ChildProcess[] = [];
  private failures = 0;
  private closed = false;
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly cliEntry: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly count: number,
    private readonly warn: (line: string) => void = () => undefined,
    private readonly info: (line: string) => void = () => undefined,
  ) {
    for (let i = 0; i < count; i++) this.start();
  }

  /** pids of the spares waiting now (for logs and tests). */
  pids(): number[] {
    return this.ready.flatMap((child) => (child.pid === undefined ? [] : [child.pid]));
  }

  /** A waiting spare, taken (another starts shortly after), or undefined when none is alive. */
  take(): ChildProcess | undefined {
    let child: ChildProcess | undefined;
    while ((child = this.ready.shift()) !== undefined) {
      if (child.exitCode === null && child.signalCode === null) break;
    }
    if (!child) return undefined;
    child.stderr?.removeAllListeners('data');
    this.later(REFILL_MS);
    return child;
  }

  /** Let the waiting spares go (their stdin closes: each exits 0) and start no more. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(
      this.ready.splice(0).map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
        const exited = new Promise((resolve) => child.once('exit', resolve));
        const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.stdin?.end();
        return exited.finally(() => clearTimeout(kill));
      }),
    );
  }

  private later(ms: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.start();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  private start(): void {
    if (this.closed || this.ready.length >= this.count) return;
    const child = spawn(process.execPath, [...SESSION_NODE_FLAGS, this.cliEntry, 'runner'], {
      env: { ...this.env, ...LIFELINE_ENV, PINCER_SPARE: '1' },
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    child.stdin!.on('error', () => undefined); // a spare that died before its document: its exit says so
    // Until it has a session its few lines ("spare ready") go nowhere; the assignment routes them to the session's log.
    child.stderr!.on('data', () => undefined);
    child.once('error', (err) => this.warn(`spare runner: ${err.message}`));
    child.once('exit', (code, signal) => {
      const index = this.ready.indexOf(child);
      if (index === -1 || this.closed) return; // given a session (its supervisor watches it now), or let go
      this.ready.splice(index, 1);
      this.failures += 1;
      if (this.failures >= MAX_FAILURES) {
        this.warn(`spare runners keep ending before they are used (last: ${code ?? signal}); keeping none`);
        return;
      }
      this.later(REFILL_MS * this.failures);
    });
    this.ready.push(child);
    if (child.pid !== undefined) this.info(`spare runner started: pid ${child.pid}`);
  }

  /** A spare was given a session and started its runner: the spares are healthy. */
  assigned(): void {
    this.failures = 0;
  }
}
