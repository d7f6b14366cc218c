import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SETTLE_RECHECKS_MS, Waker } from '../src/db/wake.js';
import { idleWaitMs } from '../src/runner/runner.js';
import { onPath } from './support/dockerd.js';

/**
 * A waker that cannot get an inotify instance polls instead of crashing: past Linux's 128 instances per user, a burst
 * of new runners used to die at start with `EMFILE: too many open files, watch`. The EMFILE here is the kernel's: a
 * child process with every file descriptor of its limit in use (prlimit) creates the waker for real.
 */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-wake-'));
  dirs.push(dir);
  return dir;
}

const WAKE_MODULE = path.resolve('dist/src/db/wake.js');

describe('the waker without inotify', () => {
  it.skipIf(!onPath('prlimit'))('falls back to polling on a real EMFILE, says why, and still wakes on its timeout and on notify()', () => {
    const dir = tempDir();
    const script = `
      import fs from 'node:fs';
      import { Waker } from ${JSON.stringify(WAKE_MODULE)};
      const held = [];
      try { for (;;) held.push(fs.openSync('/dev/null', 'r')); } catch (err) { if (err.code !== 'EMFILE') throw err; }
      const waker = new Waker(${JSON.stringify(dir)}, 'watch');
      for (const fd of held) fs.closeSync(fd);
      const started = Date.now();
      await waker.wait(30);
      const timedOut = Date.now() - started >= 25;
      setTimeout(() => waker.notify(), 10);
      await waker.wait(60_000);
      waker.close();
      process.stdout.write(JSON.stringify({ pollingBecause: waker.pollingBecause, timedOut, watching: waker.watching }));
    `;
    const child = spawnSync('prlimit', ['--nofile=64:64', process.execPath, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    expect(child.stderr).toBe('');
    const result = JSON.parse(child.stdout) as { pollingBecause: string; timedOut: boolean; watching: boolean };
    expect(result.watching).toBe(false);
    expect(result.pollingBecause).toBe(`no inotify instance for ${dir} (EMFILE; see fs.inotify.max_user_instances)`);
    expect(result.timedOut).toBe(true);
  });

  it('watches when it can (nothing to report), and poll mode never watches', async () => {
    const dir = tempDir();
    const watching = new Waker(dir, 'watch');
    expect(watching.pollingBecause).toBeUndefined();
    expect(watching.watching).toBe(true);
    const woken = watching.wait(60_000);
    fs.writeFileSync(path.join(dir, 'session.db'), 'x');
    await woken; // woken by the write, not by the timeout
    watching.close();
    expect(watching.watching).toBe(false); // closed
    const polling = new Waker(dir, 'poll');
    expect(polling.pollingBecause).toBeUndefined();
    expect(polling.watching).toBe(false);
    polling.close();
  });

  it('a watch error that is not about instances still fails at once', () => {
    expect(() => new Waker(path.join(tempDir(), 'missing'), 'watch')).toThrow(/ENOENT/);
  });
});

describe("an idle runner's wait", () => {
  const config = { pollIdleMs: 1000, idleCheckMs: 60_000 };
  it('is the long idle check while a change wakes it, the poll interval while it polls, and never past the next due row', () => {
    expect(idleWaitMs(undefined, true, config)).toBe(60_000);
    expect(idleWaitMs(undefined, false, config)).toBe(1000);
    expect(idleWaitMs(5000, true, config)).toBe(5000);
    expect(idleWaitMs(5000, false, config)).toBe(1000);
    expect(idleWaitMs(0, true, config)).toBe(0);
  });
});

describe('a change whose commit is published late', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('is announced again after each settle delay, so a reader that saw nothing yet looks again (not a minute later)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const waker = new Waker(tempDir(), 'poll');
    let wakes = 0;
    const waitOnce = async (): Promise<void> => {
      await waker.wait(60_000);
      wakes += 1;
    };
    waker.changed();
    await waitOnce(); // the change itself (nobody was waiting: the next wait returns at once)
    let previous = 0;
    for (const at of SETTLE_RECHECKS_MS) {
      const woken = waitOnce();
      vi.advanceTimersByTime(at - previous - 1);
      await Promise.resolve();
      expect(wakes).toBe(1 + SETTLE_RECHECKS_MS.indexOf(at));
      vi.advanceTimersByTime(1);
      await woken;
      previous = at;
    }
    expect(wakes).toBe(1 + SETTLE_RECHECKS_MS.length);
    // then quiet: the series is over, only the waiter's own timeout ends the next wait
    const last = waitOnce();
    vi.advanceTimersByTime(59_999);
    await Promise.resolve();
    expect(wakes).toBe(1 + SETTLE_RECHECKS_MS.length);
    vi.advanceTimersByTime(1);
    await last;
    waker.close();
  });

  it('restarts the series with every new change', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const waker = new Waker(tempDir(), 'poll');
    waker.changed();
    await waker.wait(0);
    vi.advanceTimersByTime(SETTLE_RECHECKS_MS[1]);
    await waker.wait(0); // consumed re-announcements of the first change
    waker.changed();
    await waker.wait(0);
    let woken = false;
    const wait = waker.wait(60_000).then(() => (woken = true));
    vi.advanceTimersByTime(SETTLE_RECHECKS_MS[0]);
    await wait;
    expect(woken).toBe(true);
    waker.close();
  });
});
