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
    const info: LockInfo = { pid: process.pid, since: new Date().toISOString(), ...(command ? { command } : {}) };
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
  return info && isProcessAlive(info.pid) ? info : undefined;
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
