/**
 * The home's lock names its host for `pincer host status|stop` and refuses a second host: a pid that is alive is the
 * holder only while it is the process that wrote the lock (not a zombie, not another process that got the pid).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HomeLock, lockFile, processStart, readLock } from '../src/host/home-lock.js';
import { waitFor } from './support/wait.js';

const homes: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function makeHome(): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-lock-'));
  homes.push(home);
  return home;
}

/**
 * A live process other than this one: `sleep`, and the pid of a child it never reaps (a zombie). The shell starts the
 * child, then becomes `sleep 60`, which never waits for it. On a loaded machine the child may end before the exec and
 * be reaped by the shell: then its pid is gone, and it is tried again with a longer child.
 */
async function otherProcesses(): Promise<{ live: number; zombie: number }> {
  for (let attempt = 0; ; attempt++) {
    const child = spawn('sh', ['-c', `sleep ${0.2 * 2 ** attempt} & echo $!; exec sleep 60`], { stdio: ['ignore', 'pipe', 'ignore'] });
    children.push(child);
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    await waitFor('the zombie pid', () => /^\d+\n/.test(out), { timeoutMs: 30_000 });
    const zombie = Number(out.trim());
    const state = await waitFor(
      'its child to be a zombie or gone',
      () => {
        const stat = readStat(zombie);
        return stat === undefined ? 'gone' : / Z /.test(stat.slice(stat.lastIndexOf(')'))) ? 'zombie' : undefined;
      },
      { timeoutMs: 30_000 },
    );
    if (state === 'zombie') return { live: child.pid!, zombie };
    child.kill('SIGKILL');
    if (attempt === 5) throw new Error(`the shell reaped its child each time (${attempt + 1} tries)`);
  }
}

function readStat(pid: number): string | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
}

describe('the home lock', () => {
  it('records its holder: pid, since, command and start time, and is released by it', () => {
    const home = makeHome();
    const lock = HomeLock.acquire(home, 'host');
    lock.describe({ channels: ['http'], url: 'http://127.0.0.1:1/' });
    expect(readLock(home)).toMatchObject({
      pid: process.pid,
      command: 'host',
      channels: ['http'],
      url: 'http://127.0.0.1:1/',
      start: processStart(process.pid),
    });
    expect(() => HomeLock.acquire(home, 'chat')).not.toThrow(); // this process already holds it
    lock.release();
    expect(fs.existsSync(lockFile(home))).toBe(false);
    expect(readLock(home)).toBeUndefined();
  });

  it('a second process is refused while the holder runs', async () => {
    const home = makeHome();
    const { live } = await otherProcesses();
    fs.writeFileSync(lockFile(home), JSON.stringify({ pid: live, since: new Date().toISOString(), command: 'host', start: processStart(live) }));
    expect(readLock(home)?.pid).toBe(live);
    expect(() => HomeLock.acquire(home)).toThrow(`another host (pid ${live}) is using ${home}; stop it first (pincer host stop) or use another PINCER_HOME`);
  });

  it.each([
    ['its pid now belongs to another process (another start time)', (p: { live: number }) => ({ pid: p.live, start: '1' })],
    ['its process is a zombie', (p: { zombie: number }) => ({ pid: p.zombie })],
    ['its pid is gone', () => ({ pid: 2 ** 22 + 1 })],
  ])('a lock whose holder has stopped is no holder and is taken over: %s', async (_case, holder) => {
    const home = makeHome();
    const processes = await otherProcesses();
    fs.writeFileSync(lockFile(home), JSON.stringify({ since: new Date().toISOString(), command: 'host', ...holder(processes) }));
    expect(readLock(home)).toBeUndefined();
    const lock = HomeLock.acquire(home, 'host');
    expect(readLock(home)?.pid).toBe(process.pid);
    lock.release();
  });
});
