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

/** Resident set size in MiB. */
export function rssMiB(pid: number): number | undefined {
  let status: string;
  try {
    status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return match ? Number(match[1]) / 1024 : undefined;
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
