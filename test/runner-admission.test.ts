import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeInotify, inotifyLimits } from '../src/doctor/inotify.js';
import { PROVIDER_FOOTPRINT_MIB, RunnerAdmission, runnerLimit } from '../src/host/runner-admission.js';

/** The line for room: a cap on runners alive at once, and who starts next (src/host/runner-admission.ts). */
function woken(): { calls: number; wake: () => void } {
  const counter = { calls: 0, wake: () => void (counter.calls += 1) };
  return counter;
}

describe('runner admission', () => {
  it('admits up to the cap, then queues in arrival order; a freed slot goes to the first in line only', () => {
    const admission = new RunnerAdmission(runnerLimit(2));
    const [a, b, c, d] = [woken(), woken(), woken(), woken()];
    expect(admission.tryStart('a', 'mock', a.wake)).toBe(true);
    expect(admission.tryStart('b', 'mock', b.wake)).toBe(true);
    expect(admission.tryStart('c', 'mock', c.wake)).toBe(false);
    expect(admission.tryStart('d', 'mock', d.wake)).toBe(false);
    expect(admission.tryStart('c', 'mock', c.wake)).toBe(false); // asking again keeps its place
    expect(admission.queue()).toEqual(['c', 'd']);
    admission.release('a');
    expect([c.calls, d.calls]).toEqual([1, 0]); // only the first in line is told
    expect(admission.tryStart('d', 'mock', d.wake)).toBe(false); // a later one cannot jump the line
    expect(admission.tryStart('c', 'mock', c.wake)).toBe(true);
    expect(d.calls).toBe(1); // its turn now: told, though there is no room yet
    expect(admission.tryStart('d', 'mock', d.wake)).toBe(false);
    expect(admission.inUse).toBe(2);
    admission.release('b');
    expect(admission.tryStart('d', 'mock', d.wake)).toBe(true);
    expect(admission.queue()).toEqual([]);
  });

  it('a session that withdraws leaves the line and the next is told; a release of an unknown session changes nothing', () => {
    const admission = new RunnerAdmission(runnerLimit(1));
    const [b, c] = [woken(), woken()];
    expect(admission.tryStart('a', 'mock', () => undefined)).toBe(true);
    expect(admission.tryStart('b', 'mock', b.wake)).toBe(false);
    expect(admission.tryStart('c', 'mock', c.wake)).toBe(false);
    const since = admission.waitingSince('b');
    expect(since).toBeTypeOf('number');
    admission.withdraw('b');
    expect(admission.waitingSince('b')).toBeUndefined();
    expect(c.calls).toBe(1);
    admission.release('nobody');
    expect(admission.inUse).toBe(1);
    admission.withdraw('c');
    admission.release('a');
    expect(admission.inUse).toBe(0);
    expect(admission.shortfall(0)).toBe(0);
  });

  it('shortfall: what the first in line lacks beyond the room of runners already stopping', () => {
    const admission = new RunnerAdmission(runnerLimit(2));
    admission.tryStart('a', 'mock', () => undefined);
    admission.tryStart('b', 'mock', () => undefined);
    expect(admission.shortfall(0)).toBe(0); // nobody waits
    admission.tryStart('c', 'mock', () => undefined);
    expect(admission.shortfall(0)).toBe(1);
    expect(admission.shortfall(admission.costOf('a'))).toBe(0); // a stopping runner's room is coming
  });

  it('unset, the room is half the memory and each runner costs its provider footprint; one always fits when none runs', () => {
    const limit = runnerLimit(undefined, 2 * 1024 * 2 ** 20); // a 2 GiB machine: 1024 MiB for runners
    expect(limit.capacity).toBe(1024);
    expect(limit.costOf('claude')).toBe(PROVIDER_FOOTPRINT_MIB.claude);
    expect(limit.costOf('auto')).toBe(PROVIDER_FOOTPRINT_MIB.claude); // not known yet: the largest
    expect(limit.describe).toBe(
      "1024 MiB (half of 2048 MiB) shared at each provider's footprint: about 2 Claude Code or 16 mock runners (PINCER_MAX_RUNNERS unset)",
    );
    expect(runnerLimit(3).describe).toBe('at most 3 (PINCER_MAX_RUNNERS)');
    const admission = new RunnerAdmission(limit);
    expect(['c1', 'c2', 'c3'].map((id) => admission.tryStart(id, 'claude', () => undefined))).toEqual([true, true, false]);
    // the first in line is a heavy one: a light one behind it waits too (arrival order, no passing)
    expect(admission.tryStart('m1', 'mock', () => undefined)).toBe(false);
    admission.release('c1');
    expect(admission.tryStart('c3', 'claude', () => undefined)).toBe(true);
    expect(admission.tryStart('m1', 'mock', () => undefined)).toBe(true); // two Claude runners (700 MiB) and a mock one fit in 1024
    const tiny = new RunnerAdmission(runnerLimit(undefined, 256 * 2 ** 20)); // 128 MiB: below one Claude runner
    expect(tiny.tryStart('only', 'claude', () => undefined)).toBe(true);
    expect(tiny.tryStart('second', 'claude', () => undefined)).toBe(false);
  });
});

describe("the doctor's inotify line", () => {
  it("reads the limits and counts the instances open in this user's processes, from a /proc laid out as Linux does", () => {
    const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-proc-'));
    try {
      fs.mkdirSync(path.join(proc, 'sys/fs/inotify'), { recursive: true });
      fs.writeFileSync(path.join(proc, 'sys/fs/inotify/max_user_instances'), '128\n');
      fs.writeFileSync(path.join(proc, 'sys/fs/inotify/max_user_watches'), '8192\n');
      for (const [pid, links] of [
        ['41', ['anon_inode:inotify', '/dev/null', 'anon_inode:inotify']],
        ['42', ['anon_inode:[eventfd]']],
      ] as const) {
        fs.mkdirSync(path.join(proc, pid, 'fd'), { recursive: true });
        links.forEach((target, fd) => fs.symlinkSync(target, path.join(proc, pid, 'fd', String(fd))));
      }
      const limits = inotifyLimits(proc);
      expect(limits).toEqual({ maxUserInstances: 128, maxUserWatches: 8192, inUse: 2 });
      expect(describeInotify(limits)).toMatch(/^inotify: 2 of 128 instances per user in use .*, 8192 watches/);
      expect(describeInotify(inotifyLimits(path.join(proc, 'missing')))).toContain('limits not readable here');
    } finally {
      fs.rmSync(proc, { recursive: true, force: true });
    }
  });
});
