import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { heldBy, makeRunnerCgroup, ownPath, planCgroups, readEvents } from '../src/container/cgroup.js';
import { onPath } from '../src/container/handle.js';
import { describeLimits, formatSize } from '../src/container/limits-report.js';
import { limitedCommand, parseSize, prlimitOptions, runnerLimits } from '../src/container/limits.js';
import { loadLauncherConfig } from '../src/container/config.js';

/** The parts of a bubblewrap runner's resource limits: sizes, prlimit options, the join script, cgroup trees made up in a temp folder. */
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-limits-'));
  dirs.push(dir);
  return dir;
}
const LIMITS = { memoryBytes: 256 * 1024 ** 2, cpus: 0.5, pids: 64, fileSizeBytes: 8 * 1024 ** 2 };
const SELF_V1 = '9:name=systemd:/\n8:pids:/\n4:memory:/outer/host\n1:cpu:/\n0::/\n';

/** A v1 tree like this machine's: one folder per controller, the host's memory cgroup nested. */
function v1Tree(): string {
  const root = tempDir();
  for (const dir of ['pids', 'memory/outer/host', 'cpu']) {
    fs.mkdirSync(path.join(root, dir), { recursive: true });
    fs.writeFileSync(path.join(root, dir.split('/')[0]!, 'cgroup.procs'), '');
  }
  return root;
}

describe('limit settings', () => {
  it('sizes read like Docker’s', () => {
    expect(parseSize('512m')).toBe(512 * 1024 ** 2);
    expect(parseSize('2G')).toBe(2 * 1024 ** 3);
    expect(parseSize('4096')).toBe(4096);
    expect(() => parseSize('2 GB')).toThrow(/bad size '2 GB'/);
    expect(formatSize(8 * 1024 ** 2)).toBe('8 MiB');
  });

  it('default ON, and the launcher’s configuration carries them; a bad one names its variable', () => {
    expect(runnerLimits({})).toEqual({ memoryBytes: 2 * 1024 ** 3, cpus: 1, pids: 512, fileSizeBytes: 1024 ** 3 });
    const config = loadLauncherConfig({ PINCER_RUNNER: 'bwrap', PINCER_CONTAINER_FILE_SIZE: '8m', PINCER_CONTAINER_PIDS: '64' });
    expect(config.bwrap.limits).toMatchObject({ pids: 64, fileSizeBytes: 8 * 1024 ** 2 });
    expect(() => loadLauncherConfig({ PINCER_CONTAINER_FILE_SIZE: 'lots' })).toThrow(/PINCER_CONTAINER_FILE_SIZE/);
  });
});

describe('prlimit options', () => {
  it('always a file size and no core files; address space and process count only where no cgroup holds them', () => {
    const none = { memory: false, pids: false, cpu: false };
    expect(prlimitOptions(LIMITS, { memory: true, pids: true, cpu: true }, 1000)).toEqual([`--fsize=${8 * 1024 ** 2}`, '--core=0']);
    expect(prlimitOptions(LIMITS, none, 1000)).toEqual([`--fsize=${8 * 1024 ** 2}`, '--core=0', `--as=${256 * 1024 ** 2}`, '--nproc=64']);
    // RLIMIT_NPROC does not bind root: not given as if it did
    expect(prlimitOptions(LIMITS, none, 0)).not.toContain('--nproc=64');
  });

  it.skipIf(onPath('prlimit') === undefined)('the command joins each cgroup, then runs under prlimit (run for real with folders standing in)', () => {
    const a = tempDir();
    const b = tempDir();
    const command = limitedCommand([a, b], onPath('prlimit'), prlimitOptions(LIMITS, heldBy(planCgroups(tempDir(), '')), 1000), '/bin/sh', [
      '-c',
      'echo $$; ulimit -f; ulimit -c',
    ]);
    const run = spawnSync(command.file, command.args, { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    const [pid, fsize, core] = run.stdout.trim().split('\n');
    // the same process (exec) wrote itself into both, then got the limits (ulimit -f counts 512-byte blocks)
    expect(fs.readFileSync(path.join(a, 'cgroup.procs'), 'utf8').trim()).toBe(pid);
    expect(fs.readFileSync(path.join(b, 'cgroup.procs'), 'utf8').trim()).toBe(pid);
    expect(Number(fsize)).toBe((8 * 1024 ** 2) / 512);
    expect(core).toBe('0');
  });

  it('a cgroup that refuses the process stops the start (exit 75, said why)', () => {
    const command = limitedCommand(['/nonexistent/cgroup'], undefined, [], '/bin/true', []);
    const run = spawnSync(command.file, command.args, { encoding: 'utf8' });
    expect(run.status).toBe(75);
    expect(run.stderr).toContain('cannot join the runner cgroup /nonexistent/cgroup');
  });

  it('no cgroups and no prlimit: the command as it was', () => {
    expect(limitedCommand([], undefined, ['--fsize=1'], '/usr/bin/bwrap', ['--x'])).toEqual({ file: '/usr/bin/bwrap', args: ['--x'] });
  });
});

describe('cgroups', () => {
  it('v1: nested under the host’s own cgroup of each controller', () => {
    const root = v1Tree();
    const plan = planCgroups(root, SELF_V1);
    expect(plan.version).toBe(1);
    expect(plan.parents).toEqual({ pids: path.join(root, 'pids'), memory: path.join(root, 'memory/outer/host'), cpu: path.join(root, 'cpu') });
    expect(ownPath(SELF_V1, 'memory')).toBe('/outer/host');
    expect(ownPath('', 'pids')).toBe('/');
  });

  it('v1: one runner’s folders get the limits, count what stopped it, and are removed at its end', async () => {
    const root = v1Tree();
    const plan = planCgroups(root, SELF_V1);
    const cgroup = makeRunnerCgroup(plan, LIMITS);
    expect(cgroup.dirs).toHaveLength(3);
    const [memory] = cgroup.dirs.filter((d) => d.includes('/memory/'));
    const pids = cgroup.dirs.find((d) => d.includes('/pids/'))!;
    const cpu = cgroup.dirs.find((d) => d.includes('/cpu/'))!;
    expect(fs.readFileSync(path.join(memory!, 'memory.limit_in_bytes'), 'utf8')).toBe(String(256 * 1024 ** 2));
    expect(fs.readFileSync(path.join(pids, 'pids.max'), 'utf8')).toBe('64');
    expect(fs.readFileSync(path.join(cpu, 'cpu.cfs_quota_us'), 'utf8')).toBe('50000');
    // the kernel's counters (files a test may write; the kernel's own are read-only)
    fs.writeFileSync(path.join(memory!, 'memory.oom_control'), 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n');
    fs.writeFileSync(path.join(pids, 'pids.events'), 'max 17\n');
    expect(readEvents(plan, path.basename(pids))).toEqual({ oomKills: 2, forksRefused: 17 });
    // a real cgroup folder holds only kernel files, which rmdir takes with it; here plain files stand in
    for (const dir of cgroup.dirs) for (const file of fs.readdirSync(dir)) fs.rmSync(path.join(dir, file));
    await cgroup.close();
    for (const dir of cgroup.dirs) expect(fs.existsSync(dir)).toBe(false);
  });

  it('v2: controllers enabled down to pincer-runners, limits in its runner folders', () => {
    const root = tempDir();
    fs.writeFileSync(path.join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
    fs.writeFileSync(path.join(root, 'cgroup.subtree_control'), '');
    const plan = planCgroups(root, '0::/\n');
    expect(plan.version).toBe(2);
    const parent = path.join(root, 'pincer-runners');
    expect(plan.parents).toEqual({ memory: parent, pids: parent, cpu: parent });
    const cgroup = makeRunnerCgroup(plan, LIMITS);
    expect(cgroup.dirs).toEqual([expect.stringContaining(`${parent}/pincer-runner-`)]);
    expect(fs.readFileSync(path.join(cgroup.dirs[0]!, 'memory.max'), 'utf8')).toBe(String(256 * 1024 ** 2));
    expect(fs.readFileSync(path.join(cgroup.dirs[0]!, 'cpu.max'), 'utf8')).toBe('50000 100000');
  });

  it('v2 without the controllers (a hybrid host’s unified tree) falls back to v1, and says why a controller is missing', () => {
    const root = v1Tree();
    fs.rmSync(path.join(root, 'cpu'), { recursive: true });
    fs.mkdirSync(path.join(root, 'unified'));
    fs.writeFileSync(path.join(root, 'unified/cgroup.controllers'), 'hugetlb\n');
    const plan = planCgroups(root, SELF_V1);
    expect(plan.version).toBe(1);
    expect(Object.keys(plan.parents).sort()).toEqual(['memory', 'pids']);
    expect(plan.missing.cpu).toBe(`no cgroup cpu controller at ${path.join(root, 'cpu')}`);
    expect(fs.existsSync(path.join(root, 'unified/pincer-runners'))).toBe(false);
  });
});

describe('pincer doctor’s lines', () => {
  it('says what holds each limit, and what nothing holds and why', () => {
    const env = { PINCER_CONTAINER_MEMORY: '256m' };
    const full = describeLimits('bwrap', env, planCgroups(v1Tree(), SELF_V1), '/usr/bin/prlimit', 0).join('\n');
    expect(full).toMatch(/memory 256 MiB \(PINCER_CONTAINER_MEMORY\): cgroup v1 under .*memory\/outer\/host/);
    expect(full).toContain('largest file 1 GiB (PINCER_CONTAINER_FILE_SIZE): RLIMIT_FSIZE');
    expect(full).toContain('session folder 4 GiB, 250000 files (PINCER_SESSION_DISK, PINCER_SESSION_FILES): checked by the host');
    const bare = describeLimits('bwrap', env, planCgroups(tempDir(), ''), '/usr/bin/prlimit', 0).join('\n');
    expect(bare).toMatch(/memory 256 MiB .*: RLIMIT_AS only \(address space, not memory; no cgroup memory controller at /);
    expect(bare).toMatch(/! 512 processes .*: not held \(no cgroup pids controller at .*; RLIMIT_NPROC does not bind root\)/);
    expect(describeLimits('bwrap', env, planCgroups(tempDir(), ''), false, 0).join('\n')).toMatch(
      /! largest file .*not held \(prlimit \(util-linux\) not found\)/,
    );
    expect(describeLimits('process', { PINCER_SESSION_DISK: '1g' })).toEqual([
      expect.stringMatching(/^limits: none/),
      expect.stringMatching(/session folder 1 GiB, .*checked by the host, its runner killed past it; not what the agent leaves running/),
    ]);
    expect(describeLimits('docker', { PINCER_CONTAINER_FILE_SIZE: '8m' }).join('\n')).toContain(
      'largest file 8 MiB (PINCER_CONTAINER_FILE_SIZE): docker --ulimit fsize; no core files',
    );
    expect(describeLimits('bwrap', { PINCER_CONTAINER_PIDS: 'many' })[0]).toMatch(/^limits: bad limit settings/);
  });
});
