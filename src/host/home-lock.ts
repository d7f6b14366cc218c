import fs from 'node:fs';
import path from 'node:path';
import { PincerError } from '../shared/errors.js';

/**
 * What the lock tells another process about the host holding it: `pincer host status`/`stop` read it, and
 * `pincer chat` finds the socket of a running host's terminal channel in it.
 */
export interface LockInfo {
  pid: number;
  /** ISO time the host took the lock. */
  since: string;
  /** `host` (pincer host) or `chat` (the in-process host of pincer chat). */
  command?: string;
  /** the host's channels once it has started (`terminal`, `http`, platforms). */
  channels?: string[];
  /** the HTTP channel's address, when it listens. */
  url?: string;
  /** the local socket `pincer chat` attaches to, when the host serves one. */
  chatSocket?: string;
  /**
   * The holder's start time as /proc/<pid>/stat gives it (clock ticks since boot), where there is a /proc: a pid that
   * is alive but started at another time is another process that got the dead host's pid, never signalled as the host.
   */
  start?: string;
}

/**
 * One host per home: two hosts on the same sessions would start two runners per session. The lock is a file holding
 * the host's pid (and what it serves, as JSON), created exclusively; a lock whose pid is dead (a host killed with
 * SIGKILL) is taken over.
 */
export class HomeLock {
  private constructor(
    private readonly file: string,
    private info: LockInfo,
  ) {}

  static acquire(home: string, command?: string): HomeLock {
    const file = lockFile(home);
    const start = processStart(process.pid);
    const info: LockInfo = { pid: process.pid, since: new Date().toISOString(), ...(command ? { command } : {}), ...(start ? { start } : {}) };
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        fs.writeFileSync(file, `${JSON.stringify(info)}\n`, { flag: 'wx', mode: 0o600 });
        return new HomeLock(file, info);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = readLock(home);
      if (holder && holder.pid !== process.pid) {
        const what = holder.command === 'chat' ? 'a pincer chat' : 'another host';
        throw new PincerError('config', `${what} (pid ${holder.pid}) is using ${home}; stop it first (pincer host stop) or use another PINCER_HOME`);
      }
      fs.rmSync(file, { force: true }); // stale: its host is gone
    }
    throw new PincerError('config', `could not lock ${file}`);
  }

  /** Adds what the started host serves; written whole to a temp file and renamed, so a reader never sees half. */
  describe(details: Omit<LockInfo, 'pid' | 'since'>): void {
    this.info = { ...this.info, ...details };
    const temp = `${this.file}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(temp, `${JSON.stringify(this.info)}\n`, { mode: 0o600 });
      fs.renameSync(temp, this.file);
    } catch {
      // The details only serve `pincer host status`; the lock itself (the pid) is already held.
      fs.rmSync(temp, { force: true });
    }
  }

  release(): void {
    try {
      if (parseLock(fs.readFileSync(this.file, 'utf8'))?.pid === process.pid) fs.rmSync(this.file);
    } catch {
      // already gone
    }
  }
}

export function lockFile(home: string): string {
  return path.join(home, 'host.lock');
}

/** The lock of the live host on this home, or undefined when there is none (no lock, or its process is gone). */
export function readLock(home: string): LockInfo | undefined {
  let text: string;
  try {
    text = fs.readFileSync(lockFile(home), 'utf8');
  } catch {
    // no lock file (or unreadable): no host holds the home
    return undefined;
  }
  const info = parseLock(text);
  return info && isLockHolder(info) ? info : undefined;
}

/**
 * Whether the lock's process still runs: alive, not a zombie (a host whose parent has not reaped it has stopped), and
 * (where /proc says) the process that wrote the lock, not another one that got its pid.
 */
export function isLockHolder(info: LockInfo): boolean {
  if (!isProcessAlive(info.pid)) return false;
  const stat = processStat(info.pid);
  if (!stat) return true; // no /proc: the pid alone decides
  if (stat.state === 'Z') return false;
  return info.start === undefined || stat.start === info.start; // (a lock from before it said when its holder started)
}

/** The start time in /proc/<pid>/stat (clock ticks since boot), or undefined without a readable /proc. */
export function processStart(pid: number): string | undefined {
  return processStat(pid)?.start;
}

function processStat(pid: number): { state: string; start: string } | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    // not Linux, /proc not mounted, or the process just ended
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so count from the last ')'; state is field 3,
  // the start time field 22.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state, start] = [fields[0], fields[19]];
  return state && start && /^\d+$/.test(start) ? { state, start } : undefined;
}

/** A lock's text: JSON, or only a pid (what hosts wrote before the lock said more). */
function parseLock(text: string): LockInfo | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return { pid: Number(trimmed), since: '' };
  try {
    const value = JSON.parse(trimmed) as Partial<LockInfo>;
    if (typeof value.pid !== 'number' || !Number.isInteger(value.pid) || value.pid <= 0) return undefined;
    return {
      pid: value.pid,
      since: typeof value.since === 'string' ? value.since : '',
      command: typeof value.command === 'string' ? value.command : undefined,
      channels: Array.isArray(value.channels) ? value.channels.filter((c): c is string => typeof c === 'string') : undefined,
      url: typeof value.url === 'string' ? value.url : undefined,
      chatSocket: typeof value.chatSocket === 'string' ? value.chatSocket : undefined,
      start: typeof value.start === 'string' ? value.start : undefined,
    };
  } catch {
    // a lock file that is not ours to read: treated as no holder's details
    return undefined;
  }
}

/** Whether a process with this pid exists (EPERM: it does, owned by someone else). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
