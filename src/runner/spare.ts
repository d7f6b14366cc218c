import type { Socket } from 'node:net';
import { readStdinDocument } from './stdin-document.js';
import { errorMessage, type Logger } from '../shared/log.js';
import type { StdinDocument } from '../shared/stdin-document.js';

/** How long a spare waits for its session's previous runner to let go of the launch lock (as a launch does). */
const LOCK_WAIT_S = 60;

/** What a spare runner is given: its session's environment and the secrets its MCP servers refer to. */
export interface SpareAssignment {
  env: NodeJS.ProcessEnv;
  secrets: Record<string, string>;
}

/**
 * A spare runner (PINCER_SPARE=1, started by a process launcher before any session needed it, docs/performance.md
 * "The warm spare"): it has loaded its code and waits, as long as it takes, for the launch document that gives it a
 * session. The document's `env` becomes this process's whole environment — the one a launch would have started it
 * with — so everything after reads the session's settings as usual; settings read while its modules loaded (the log
 * level, the DB's busy timeout) are the host's, the same for every session. Returns the exit code instead when no
 * session comes (the host stopped: 0) or the document is wrong (2).
 */
export async function awaitAssignment(log: Logger): Promise<SpareAssignment | number> {
  log.info(`spare ready, pid ${process.pid}`);
  let document: StdinDocument;
  try {
    document = await readStdinDocument(process.stdin, null);
  } catch (err) {
    if (process.stdin.readableEnded) return 0; // the host let its spare go
    log.error(errorMessage(err));
    return 2;
  }
  if (!document.env) {
    log.error('a spare runner was given no environment');
    return 2;
  }
  for (const name of Object.keys(process.env)) delete process.env[name];
  Object.assign(process.env, document.env);
  if (document.lock && !(await holdLaunchLock(document.lock, log))) return 75;
  return { env: process.env, secrets: document.secrets };
}

/**
 * Take the session's launch lock (src/container/handle.ts) for as long as this process lives, as `lockedCommand` does
 * for a runner it starts: a shell opens the lock file as fd 9, takes flock(2) on it, then becomes `cat` on a pipe from
 * us, keeping fd 9 until the pipe closes when we end. False when the previous runner kept it past the wait (exit 75,
 * which the host counts as a failed start, like a launch's).
 */
async function holdLaunchLock(lock: { file: string; flock: string }, log: Logger): Promise<boolean> {
  const { spawn } = await import('node:child_process');
  const script = `exec 9>>"$0" || exit 75; "$1" -n 9 || { echo waiting >&2; "$1" -w ${LOCK_WAIT_S} 9 || exit 75; }; echo locked; exec cat >/dev/null`;
  const holder = spawn('/bin/sh', ['-c', script, lock.file, lock.flock], { stdio: ['pipe', 'pipe', 'pipe'] });
  holder.stderr.once('data', () => log.info('waiting for the previous runner of this session to end'));
  const locked = await new Promise<boolean>((resolve) => {
    holder.stdout.once('data', () => resolve(true));
    holder.once('exit', () => resolve(false));
    holder.once('error', () => resolve(false));
  });
  if (!locked) {
    log.error(`the previous runner of this session still runs after ${LOCK_WAIT_S} s; not starting`);
    return false;
  }
  // Its pipes and process must not keep this process alive: the lock goes when we go.
  holder.stdout.destroy();
  holder.stderr.destroy();
  (holder.stdin as Socket).unref();
  holder.unref();
  return true;
}
