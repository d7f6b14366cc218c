import { planCgroups, type CgroupPlan } from './cgroup.js';
import { onPath } from './handle.js';
import { settingsSchema } from '../shared/settings.js';
import { parseSize, runnerLimits, type RunnerLimits } from './limits.js';
import type { RunnerKind } from './types.js';

/**
 * `pincer doctor`'s lines on a runner's resource limits in `kind`: each limit, what holds it, or why nothing does.
 * Looks only (`planCgroups(…, look)`): makes no cgroup.
 */
export function describeLimits(
  kind: RunnerKind,
  env: NodeJS.ProcessEnv,
  plan?: CgroupPlan,
  prlimit: string | false = onPath('prlimit') ?? false,
  uid = process.getuid?.() ?? 0,
): string[] {
  let limits: RunnerLimits;
  try {
    limits = runnerLimits(env);
  } catch (error) {
    return [`limits: bad limit settings (${(error as Error).message.split('\n')[0]})`];
  }
  const size = (bytes: number): string => formatSize(bytes);
  const folder = sessionFolderLine(env);
  if (kind === 'process')
    return ['limits: none (a process runner has no memory, CPU or process limits; use bwrap or docker)', `  ${folder}; not what the agent leaves running`];
  if (kind === 'docker')
    return [
      `limits: memory ${size(limits.memoryBytes)}, ${limits.cpus} CPUs, ${limits.pids} processes (docker --memory/--cpus/--pids-limit)`,
      `  largest file ${size(limits.fileSizeBytes)} (PINCER_CONTAINER_FILE_SIZE): docker --ulimit fsize; no core files`,
      `  ${folder}`,
    ];
  if (kind !== 'bwrap') return [];
  return [...describeBwrap(limits, plan ?? planCgroups(undefined, undefined, true), prlimit, uid), `  ${folder}`];
}

function describeBwrap(limits: RunnerLimits, plan: CgroupPlan, prlimit: string | false, uid: number): string[] {
  const where = (c: 'memory' | 'pids' | 'cpu'): string => `cgroup v${plan.version} under ${plan.parents[c]}`;
  const noPrlimit = 'prlimit (util-linux) not found';
  const lines = ['limits of a bwrap runner:'];
  const memory = `memory ${formatSize(limits.memoryBytes)} (PINCER_CONTAINER_MEMORY)`;
  if (plan.parents.memory) lines.push(`  ${memory}: ${where('memory')}`);
  else if (prlimit) lines.push(`  ${memory}: RLIMIT_AS only (address space, not memory; ${plan.missing.memory})`);
  else lines.push(`  ! ${memory}: not held (${plan.missing.memory}; ${noPrlimit})`);
  const pids = `${limits.pids} processes (PINCER_CONTAINER_PIDS)`;
  if (plan.parents.pids) lines.push(`  ${pids}: ${where('pids')}`);
  else if (uid === 0) lines.push(`  ! ${pids}: not held (${plan.missing.pids}; RLIMIT_NPROC does not bind root)`);
  else if (prlimit) lines.push(`  ${pids}: RLIMIT_NPROC, counting every process of uid ${uid} (${plan.missing.pids})`);
  else lines.push(`  ! ${pids}: not held (${plan.missing.pids}; ${noPrlimit})`);
  const cpus = `${limits.cpus} CPUs (PINCER_CONTAINER_CPUS)`;
  lines.push(plan.parents.cpu ? `  ${cpus}: ${where('cpu')}` : `  ! ${cpus}: not held (${plan.missing.cpu})`);
  const file = `largest file ${formatSize(limits.fileSizeBytes)} (PINCER_CONTAINER_FILE_SIZE)`;
  lines.push(prlimit ? `  ${file}: RLIMIT_FSIZE` : `  ! ${file}: not held (${noPrlimit})`);
  return lines;
}

/** The session folder's limit: the host's own check (src/host/session/disk-quota.ts), the same in every mode. */
function sessionFolderLine(env: NodeJS.ProcessEnv): string {
  const e = settingsSchema(['PINCER_SESSION_DISK', 'PINCER_SESSION_FILES']).safeParse(env);
  if (!e.success) return '! session folder: bad PINCER_SESSION_DISK or PINCER_SESSION_FILES';
  const size = formatSize(parseSize(e.data.PINCER_SESSION_DISK));
  return `session folder ${size}, ${e.data.PINCER_SESSION_FILES} files (PINCER_SESSION_DISK, PINCER_SESSION_FILES): checked by the host, its runner killed past it`;
}

export function formatSize(bytes: number): string {
  for (const [unit, factor] of [
    ['GiB', 1024 ** 3],
    ['MiB', 1024 ** 2],
    ['KiB', 1024],
  ] as const)
    if (bytes >= factor && bytes % factor === 0) return `${bytes / factor} ${unit}`;
  return `${bytes} bytes`;
}
