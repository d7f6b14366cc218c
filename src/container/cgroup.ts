import fs from 'node:fs';
import path from 'node:path';
import { createLogger } from '../shared/log.js';
import type { HeldByCgroup, RunnerLimits } from './limits.js';

const log = createLogger('container');

/**
 * Cgroups for bubblewrap runners, made by the host itself (no systemd needed): one folder per runner with its memory,
 * process and CPU limits, joined by the launch script before bwrap starts (limits.ts `limitedCommand`) and removed
 * when the runner ends. cgroup v2 where the hierarchy lets the host enable the controllers, else v1's per-controller
 * hierarchies (as on this kind of container host). Whatever cannot be made here is reported with why (`pincer doctor`).
 */
export interface CgroupPlan {
  version: 1 | 2;
  /** the parent folder of runner cgroups, per controller (v2: the same folder for each). */
  parents: Partial<Record<Controller, string>>;
  /** why a controller is not used ('' when it is). */
  missing: Partial<Record<Controller, string>>;
}

export type Controller = 'memory' | 'pids' | 'cpu';
const CONTROLLERS: Controller[] = ['memory', 'pids', 'cpu'];
/** the folder under a v2 hierarchy's root that holds runner cgroups (a leaf folder of no process, so it may delegate). */
const V2_PARENT = 'pincer-runners';

/**
 * What the host can use here. `root` is the cgroup mount (tests pass a made-up tree), `self` /proc/self/cgroup's text.
 * `look` (pincer doctor): change nothing, only say what a host would get.
 */
export function planCgroups(root = '/sys/fs/cgroup', self = readSelf(), look = false): CgroupPlan {
  const v2 = [root, path.join(root, 'unified')].find((dir) => exists(path.join(dir, 'cgroup.controllers')));
  if (v2 !== undefined) {
    const plan = planV2(v2, look);
    if (Object.keys(plan.parents).length > 0 || !exists(path.join(root, 'memory'))) return plan;
  }
  return planV1(root, self);
}

function planV2(mount: string, look: boolean): CgroupPlan {
  const plan: CgroupPlan = { version: 2, parents: {}, missing: {} };
  const available = read(path.join(mount, 'cgroup.controllers')).split(/\s+/);
  const parent = path.join(mount, V2_PARENT);
  if (!CONTROLLERS.some((c) => available.includes(c))) {
    for (const c of CONTROLLERS) plan.missing[c] = `the cgroup v2 hierarchy at ${mount} has no ${c} controller`;
    return plan;
  }
  try {
    if (look) fs.accessSync(mount, fs.constants.W_OK);
    else fs.mkdirSync(parent, { recursive: true });
  } catch (error) {
    for (const c of CONTROLLERS) plan.missing[c] = `cannot make ${parent}: ${(error as Error).message}`;
    return plan;
  }
  for (const c of CONTROLLERS) {
    if (!available.includes(c)) {
      plan.missing[c] = `the cgroup v2 hierarchy at ${mount} has no ${c} controller`;
      continue;
    }
    const why = enable(mount, c, look) ?? (look ? undefined : enable(parent, c, look));
    if (why === undefined) plan.parents[c] = parent;
    else plan.missing[c] = why;
  }
  return plan;
}

/** '+c' into `dir`'s subtree_control; undefined when it is (or already was) on, else why not. */
function enable(dir: string, controller: Controller, look: boolean): string | undefined {
  const file = path.join(dir, 'cgroup.subtree_control');
  if (read(file).split(/\s+/).includes(controller)) return undefined;
  try {
    if (look) fs.accessSync(file, fs.constants.W_OK);
    else fs.writeFileSync(file, `+${controller}`);
    return undefined;
  } catch (error) {
    return `cannot enable ${controller} in ${file}: ${(error as Error).message}`;
  }
}

function planV1(root: string, self: string): CgroupPlan {
  const plan: CgroupPlan = { version: 1, parents: {}, missing: {} };
  for (const c of CONTROLLERS) {
    const mount = path.join(root, c);
    if (!exists(path.join(mount, 'cgroup.procs'))) {
      plan.missing[c] = `no cgroup ${c} controller at ${mount}`;
      continue;
    }
    // nest under the host's own cgroup of that controller, so the limits the host itself has still hold
    const own = ownPath(self, c);
    const parent = path.resolve(mount, `.${own}`);
    try {
      fs.accessSync(parent, fs.constants.W_OK);
      plan.parents[c] = parent;
    } catch (error) {
      plan.missing[c] = `cannot make cgroups in ${parent}: ${(error as Error).message}`;
    }
  }
  return plan;
}

/** The host's cgroup path of a v1 controller ("4:memory:/a/b" → "/a/b"; "/" when not listed). */
export function ownPath(self: string, controller: string): string {
  for (const line of self.split('\n')) {
    const [, names, where] = /^\d+:([^:]*):(.*)$/.exec(line.trim()) ?? [];
    if (names !== undefined && names.split(',').includes(controller)) return where || '/';
  }
  return '/';
}

/** What the plan holds of the limits. */
export function heldBy(plan: CgroupPlan): HeldByCgroup {
  return { memory: plan.parents.memory !== undefined, pids: plan.parents.pids !== undefined, cpu: plan.parents.cpu !== undefined };
}

/** One runner's cgroup: its folders (to join) and what it saw when it ended. */
export interface RunnerCgroup {
  dirs: string[];
  /** after the runner ended: how often a limit stopped it, then the folders removed. */
  close(): Promise<LimitEvents>;
}

export interface LimitEvents {
  /** processes the kernel killed for going over the memory limit. */
  oomKills: number;
  /** forks refused at the process limit. */
  forksRefused: number;
}

let made = 0;

/** Make one runner's cgroup folders with `limits` written. A file the kernel refuses throws (the start fails, clearly). */
export function makeRunnerCgroup(plan: CgroupPlan, limits: RunnerLimits): RunnerCgroup {
  const name = `pincer-runner-${process.pid}-${++made}`;
  const dirs = [...new Set(Object.values(plan.parents))].map((parent) => path.join(parent, name));
  const created: string[] = [];
  try {
    for (const dir of dirs) {
      fs.mkdirSync(dir);
      created.push(dir);
    }
    for (const [controller, parent] of Object.entries(plan.parents) as Array<[Controller, string]>) {
      writeLimit(plan.version, controller, path.join(parent, name), limits);
    }
  } catch (error) {
    for (const dir of created) removeDir(dir);
    throw error;
  }
  return { dirs, close: () => closeCgroup(plan, dirs, name) };
}

function writeLimit(version: 1 | 2, controller: Controller, dir: string, limits: RunnerLimits): void {
  const period = 100_000;
  const quota = Math.max(1000, Math.round(limits.cpus * period));
  const files: Array<[string, string, boolean]> =
    version === 2
      ? {
          memory: [
            ['memory.max', String(limits.memoryBytes), true],
            ['memory.swap.max', '0', false],
          ] as Array<[string, string, boolean]>,
          pids: [['pids.max', String(limits.pids), true]] as Array<[string, string, boolean]>,
          cpu: [['cpu.max', `${quota} ${period}`, true]] as Array<[string, string, boolean]>,
        }[controller]
      : {
          memory: [
            ['memory.limit_in_bytes', String(limits.memoryBytes), true],
            ['memory.memsw.limit_in_bytes', String(limits.memoryBytes), false],
          ] as Array<[string, string, boolean]>,
          pids: [['pids.max', String(limits.pids), true]] as Array<[string, string, boolean]>,
          cpu: [
            ['cpu.cfs_period_us', String(period), true],
            ['cpu.cfs_quota_us', String(quota), true],
          ] as Array<[string, string, boolean]>,
        }[controller];
  for (const [file, value, required] of files) {
    try {
      fs.writeFileSync(path.join(dir, file), value);
    } catch (error) {
      // swap accounting is often off (no memsw/swap file): memory alone still holds
      if (required) throw error;
    }
  }
}

async function closeCgroup(plan: CgroupPlan, dirs: string[], name: string): Promise<LimitEvents> {
  const events = readEvents(plan, name);
  for (const dir of dirs) await removeWhenEmpty(dir);
  return events;
}

/** The kernel's counters: v2 memory.events `oom_kill`, v1 memory.oom_control `oom_kill`; pids.events `max` in both. */
export function readEvents(plan: CgroupPlan, name: string): LimitEvents {
  const counter = (controller: Controller, file: string, key: string): number => {
    const parent = plan.parents[controller];
    if (parent === undefined) return 0;
    const match = new RegExp(`^${key} (\\d+)$`, 'm').exec(read(path.join(parent, name, file)));
    return match ? Number(match[1]) : 0;
  };
  return {
    oomKills: counter('memory', plan.version === 2 ? 'memory.events' : 'memory.oom_control', 'oom_kill'),
    forksRefused: counter('pids', 'pids.events', 'max'),
  };
}

/** A runner's leftovers (bwrap's --die-with-parent kill arrives a moment later) are killed, then the folder removed. */
async function removeWhenEmpty(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    if (removeDir(dir)) return;
    for (const pid of read(path.join(dir, 'cgroup.procs')).split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL'); // a process of this runner's own cgroup: nothing else is in it
      } catch {
        // ended already
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  log.warn(`could not remove the runner cgroup ${dir}`);
}

function removeDir(dir: string): boolean {
  try {
    fs.rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

function readSelf(): string {
  return read('/proc/self/cgroup');
}

function read(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return ''; // absent: the caller treats it as "not there"
  }
}

function exists(file: string): boolean {
  return fs.existsSync(file);
}
