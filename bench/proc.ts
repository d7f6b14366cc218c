import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/**
 * What the kernel says about a process (Linux /proc): CPU time from `/proc/<pid>/stat` (utime + stime, in clock
 * ticks) and resident memory from `/proc/<pid>/status` (VmRSS). Readings of a process that has exited are undefined.
 */
let clockTicks: number | undefined;

/** Clock ticks per second (`getconf CLK_TCK`; 100 on every Linux we run on). */
export function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** CPU time used so far (user + system), in milliseconds. */
export function cpuTimeMs(pid: number): number | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 14 and 15 (utime, stime) are at 11 and 12 once the first two are gone.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / ticksPerSecond();
}

/** A `Name:   123 kB` line of a /proc file, in MiB. */
function kbField(file: string, name: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, 'm').exec(text);
  return match ? Number(match[1]) / 1024 : undefined;
}

/** Resident set size (VmRSS) in MiB: what `ps` and `top` show, shared pages of the node binary included. */
export function rssMiB(pid: number): number | undefined {
  return kbField(`/proc/${pid}/status`, 'VmRSS');
}

/** The private part of RSS (RssAnon: heap, stacks, native allocations) in MiB; the rest is file pages shared by every node process. */
export function anonRssMiB(pid: number): number | undefined {
  return kbField(`/proc/${pid}/status`, 'RssAnon');
}

/** Proportional set size in MiB: shared pages divided among the processes sharing them — what a fleet really costs. */
export function pssMiB(pid: number): number | undefined {
  return kbField(`/proc/${pid}/smaps_rollup`, 'Pss');
}

/**
 * Unique set size in MiB (Private_Clean + Private_Dirty of smaps_rollup): the pages no other process maps, what
 * stopping this process gives back. Pages of the node binary count as private only while no other node process
 * touched them.
 */
export function ussMiB(pid: number): number | undefined {
  const clean = kbField(`/proc/${pid}/smaps_rollup`, 'Private_Clean');
  const dirty = kbField(`/proc/${pid}/smaps_rollup`, 'Private_Dirty');
  return clean === undefined || dirty === undefined ? undefined : clean + dirty;
}

/** CPU use of `pids` over `windowMs`, as a percentage of one core (summed over the processes). */
export async function cpuPercentOver(pids: number[], windowMs: number): Promise<{ percent: number; cpuMs: number }> {
  const before = pids.map((pid) => cpuTimeMs(pid) ?? Number.NaN);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, windowMs));
  const elapsed = performance.now() - started;
  const after = pids.map((pid) => cpuTimeMs(pid) ?? Number.NaN);
  const cpuMs = after.reduce((sum, ms, i) => sum + (ms - before[i]!), 0);
  return { percent: (cpuMs / elapsed) * 100, cpuMs };
}
