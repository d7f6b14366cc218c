import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { STDIN_DOCUMENT_ENV, stdinDocumentLine } from '../shared/stdin-document.js';
import type { LimitEvents } from './cgroup.js';
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
  afterExit?(): Promise<LimitEvents | void>;
}

/** The runner's variable that turns its stdin into a lifeline (see `runnerStdio`). */
export const LIFELINE_ENV = { PINCER_STOP_ON_STDIN_EOF: '1' };

/**
 * The lifeline's variables, plus the one announcing a launch document on stdin when the launch has secrets for the
 * runner (src/shared/stdin-document.ts): only the flag goes into the environment, never a value.
 */
export function lifelineEnv(options: LaunchOptions): Record<string, string> {
  return hasSecrets(options) ? { ...LIFELINE_ENV, [STDIN_DOCUMENT_ENV]: '1' } : { ...LIFELINE_ENV };
}

/** Write the launch document (the secrets) as the first line of the runner's stdin, when there is one. */
export function sendStdinDocument(child: ChildProcess, options: LaunchOptions): void {
  if (!hasSecrets(options) || !child.stdin) return;
  child.stdin.on('error', () => undefined); // the runner died before it read: its exit says so
  child.stdin.write(stdinDocumentLine({ secrets: options.secrets ?? {} }));
}

function hasSecrets(options: LaunchOptions): boolean {
  return options.secrets !== undefined && Object.keys(options.secrets).length > 0;
}

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

/** How long a start waits for the session's previous runner to end before it gives up (and the host backs off). */
export const LAUNCH_LOCK_WAIT_S = 60;

/**
 * The launch lock (docs/containers.md "One runner per session"): `/bin/sh` opens the host-owned lock file as fd 9, takes
 * an exclusive flock(2) on it — waiting while the previous runner of the session still holds it — and execs the
 * launcher's command, which keeps the pid (so a bwrap's `--die-with-parent` still watches the host) and inherits fd 9.
 * The lock is the open file's, so it is held until the last process holding fd 9 has ended: the runner (process), or
 * the sandbox's own bwrap processes (bwrap), or the docker CLI (docker; there the container's name is the lock). Node
 * does not pass fd 9 on to what the runner spawns, so an agent can neither release it nor keep it after the runner.
 * Without `flock(1)` on PATH the command runs unlocked (and the host's own bookkeeping is all there is).
 */
export function lockedCommand(lockFile: string | undefined, command: string, args: string[]): { file: string; args: string[] } {
  const flock = onPath('flock');
  if (lockFile === undefined || flock === undefined) return { file: command, args };
  // `command` must be a path: the launched environment may have no PATH (bwrap runs with an empty one)
  return { file: '/bin/sh', args: ['-c', LOCKED_SCRIPT, lockFile, flock, command, ...args] };
}

/**
 * Whether some process still holds the session's launch lock: a runner is alive, perhaps one whose supervisor died
 * and that is finishing its turn. A probe with `flock -n` (75: taken by another); false without flock(1) or a lock
 * file, where `lockedCommand` locks nothing either.
 */
export function launchLockHeld(lockFile: string): boolean {
  const flock = onPath('flock');
  if (flock === undefined || !fs.existsSync(lockFile)) return false;
  return spawnSync(flock, ['-n', '-E', '75', lockFile, 'true'], { stdio: 'ignore', timeout: 5000 }).status === 75;
}

/** $0 the lock file, $1 flock(1), then the command. Exit 75 (EX_TEMPFAIL): the host counts it as a failed start. */
const LOCKED_SCRIPT = [
  'exec 9>>"$0" || exit 75',
  'flock=$1; shift',
  'if ! "$flock" -n 9; then',
  '  echo "[launcher] waiting for the previous runner of this session to end" >&2',
  `  "$flock" -w ${LAUNCH_LOCK_WAIT_S} 9 || { echo "[launcher] the previous runner of this session still runs after ${LAUNCH_LOCK_WAIT_S} s; not starting" >&2; exit 75; }`,
  '  echo "[launcher] the previous runner ended" >&2',
  'fi',
  'exec "$@"',
].join('\n');

const found = new Map<string, string | undefined>();
/** The absolute path of `name` on the host's PATH (looked up once). */
export function onPath(name: string): string | undefined {
  if (!found.has(name)) {
    const dirs = (process.env.PATH ?? '').split(path.delimiter).filter((dir) => path.isAbsolute(dir));
    found.set(
      name,
      dirs.map((dir) => path.join(dir, name)).find((file) => fs.existsSync(file)),
    );
  }
  return found.get(name);
}

export function launchedRunner(kind: RunnerKind, child: ChildProcess, hooks: EndHooks): LaunchedRunner {
  let ended = false;
  let killTimer: NodeJS.Timeout | undefined;
  let limits: LimitEvents | undefined;
  const exited = new Promise<number | string>((resolve) => {
    const finish = (code: number | string): void => {
      if (ended) return;
      ended = true;
      if (killTimer) clearTimeout(killTimer);
      void (hooks.afterExit?.() ?? Promise.resolve())
        .then((events) => (limits = events || undefined))
        .catch(() => undefined) // the hook logs its own failures; the exit is reported either way
        .then(() => resolve(code));
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
  return { kind, child, containerName: hooks.containerName, exited, stop, kill, limitsHit: () => limits };
}
