import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type { LaunchedRunner, LaunchOptions, RunnerKind } from './types.js';

/** How one kind of launcher asks its runner to end; `launchedRunner` adds the shared bookkeeping. */
export interface EndHooks {
  containerName?: string;
  /** ask the runner to stop (SIGTERM, directly or through docker); it should exit within `graceMs`. */
  terminate(graceMs: number): void;
  /** end it now. May be called more than once. */
  forceKill(): void;
  /** how long after `graceMs` to wait before `forceKill` (docker: its own `stop` escalates first). */
  killMarginMs: number;
  /** runs after the local process has exited and before `exited` resolves (docker: remove a leftover container). */
  afterExit?(): Promise<void>;
}

/** The runner's variable that turns its stdin into a lifeline (see `runnerStdio`). */
export const LIFELINE_ENV = { PINCER_STOP_ON_STDIN_EOF: '1' };

/**
 * The stdio of a launched runner: stdin a pipe we hold open and never write (the lifeline: if the host dies, the pipe
 * closes and the runner stops cleanly, through `docker run -i` too), stdout unused, stderr to the log file,
 * inherited, or piped.
 */
export function runnerStdio(options: LaunchOptions): { stdio: ['pipe', 'ignore', 'inherit' | 'pipe' | number]; close(): void } {
  if (options.logFile) {
    // never through a link at the log's name, and owner-only: the log may quote what the agent did
    const { O_WRONLY, O_APPEND, O_CREAT, O_NOFOLLOW } = fs.constants;
    const fd = fs.openSync(options.logFile, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, 0o600);
    return { stdio: ['pipe', 'ignore', fd], close: () => fs.closeSync(fd) };
  }
  return { stdio: ['pipe', 'ignore', options.stderr ?? 'inherit'], close: () => undefined };
}

export function launchedRunner(kind: RunnerKind, child: ChildProcess, hooks: EndHooks): LaunchedRunner {
  let ended = false;
  let killTimer: NodeJS.Timeout | undefined;
  const exited = new Promise<number | string>((resolve) => {
    const finish = (code: number | string): void => {
      if (ended) return;
      ended = true;
      if (killTimer) clearTimeout(killTimer);
      void (hooks.afterExit?.() ?? Promise.resolve()).catch(() => undefined).then(() => resolve(code));
    };
    child.once('exit', (code, signal) => finish(code ?? signal ?? -1));
    // spawn failures (ENOENT) emit `error` and may never emit `exit`.
    child.once('error', () => {
      if (child.pid === undefined) finish(-1);
    });
  });
  const stop = (graceMs = 5000): Promise<number | string> => {
    if (ended || killTimer) return exited;
    killTimer = setTimeout(() => hooks.forceKill(), graceMs + hooks.killMarginMs);
    hooks.terminate(graceMs);
    return exited;
  };
  const kill = (): Promise<number | string> => {
    if (!ended) hooks.forceKill();
    return exited;
  };
  return { kind, child, containerName: hooks.containerName, exited, stop, kill };
}
