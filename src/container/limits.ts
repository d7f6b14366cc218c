import { settingsSchema } from '../shared/settings.js';
import { ContainerError } from './errors.js';

/**
 * Resource limits of a bubblewrap runner (docs/security.md "Resource limits"). The same settings as a Docker runner's
 * (`PINCER_CONTAINER_MEMORY`, `_CPUS`, `_PIDS`) plus a largest-file size. How each one holds depends on the machine:
 * a cgroup (src/container/cgroup.ts) where the host may make one, rlimits through prlimit(1) otherwise.
 */
export interface RunnerLimits {
  memoryBytes: number;
  /** CPUs (a fraction allowed); only a cgroup can hold it. */
  cpus: number;
  pids: number;
  /** the largest file any process of the runner may write (RLIMIT_FSIZE). */
  fileSizeBytes: number;
}

const LIMIT_SETTINGS = ['PINCER_CONTAINER_MEMORY', 'PINCER_CONTAINER_CPUS', 'PINCER_CONTAINER_PIDS', 'PINCER_CONTAINER_FILE_SIZE'] as const;

/** The limits of these settings (the environment's values, else each setting's default); bad values are the caller's to have refused. */
export function runnerLimits(env: NodeJS.ProcessEnv = {}): RunnerLimits {
  const e = settingsSchema([...LIMIT_SETTINGS]).parse(env);
  return {
    memoryBytes: parseSize(e.PINCER_CONTAINER_MEMORY),
    cpus: Number(e.PINCER_CONTAINER_CPUS),
    pids: e.PINCER_CONTAINER_PIDS,
    fileSizeBytes: parseSize(e.PINCER_CONTAINER_FILE_SIZE),
  };
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };

/** `512m`, `2g`, `1048576` → bytes (the Docker `--memory` form; the settings' parser checked its shape). */
export function parseSize(value: string): number {
  const match = /^(\d+)([bkmg]?)$/i.exec(value.trim());
  if (!match) throw new ContainerError('config', `bad size '${value}' (like 512m or 2g)`);
  const bytes = Number(match[1]) * (UNITS[match[2]!.toLowerCase()] ?? 1);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) throw new ContainerError('config', `bad size '${value}' (like 512m or 2g)`);
  return bytes;
}

/** Which limits the cgroup holds (the rest fall back to rlimits, where one exists). */
export interface HeldByCgroup {
  memory: boolean;
  pids: boolean;
  cpu: boolean;
}

/**
 * prlimit(1) options for what no cgroup holds. RLIMIT_FSIZE always (no cgroup limits a file's size); no core files
 * (a 2 GiB runner's core would land on the host's disk). RLIMIT_AS stands in for a memory cgroup: it limits address
 * space, not memory, but Node runs within 2 GiB of it. RLIMIT_NPROC stands in for a pids cgroup only for a non-root
 * host: it counts every process of the uid (the host's too), and root is not bound by it at all.
 */
export function prlimitOptions(limits: RunnerLimits, held: HeldByCgroup, uid: number): string[] {
  const options = [`--fsize=${limits.fileSizeBytes}`, '--core=0'];
  if (!held.memory) options.push(`--as=${limits.memoryBytes}`);
  if (!held.pids && uid !== 0) options.push(`--nproc=${limits.pids}`);
  return options;
}

/**
 * `$0` the label, then cgroup folders up to `--`, then the command: the shell writes its own pid into each folder's
 * cgroup.procs before it execs, so the sandbox and everything it forks start inside (Node cannot start a child in a
 * cgroup). Exit 75 (EX_TEMPFAIL) if a cgroup refuses it: the host counts that as a failed start.
 */
const JOIN_SCRIPT = [
  'while [ "$1" != -- ]; do',
  '  echo $$ > "$1/cgroup.procs" || { echo "[launcher] cannot join the runner cgroup $1" >&2; exit 75; }',
  '  shift',
  'done',
  'shift',
  'exec "$@"',
].join('\n');

/**
 * The command that starts `command args` inside `cgroups` under `prlimit` (pure, for tests). `prlimit` absent: the
 * rlimits are left out (`pincer doctor` says so).
 */
export function limitedCommand(
  cgroups: string[],
  prlimit: string | undefined,
  options: string[],
  command: string,
  args: string[],
): { file: string; args: string[] } {
  const inner = prlimit === undefined ? [command, ...args] : [prlimit, ...options, '--', command, ...args];
  if (cgroups.length === 0) return { file: inner[0]!, args: inner.slice(1) };
  return { file: '/bin/sh', args: ['-c', JOIN_SCRIPT, 'pincer-limits', ...cgroups, '--', ...inner] };
}
