import type { WakeMode } from '../src/runner/wake.js';
import type { ByMode } from './report.js';
import { anonRssMiB, cpuPercentOver, pssMiB, rssMiB } from './proc.js';
import { MODES, RunnerSession, sleep } from './runner-session.js';

/**
 * Idle cost: CPU (utime + stime from /proc/<pid>/stat) over a window in which no message arrives, and resident memory
 * (VmRSS from /proc/<pid>/status) at its end. The mock provider starts no SDK child, so this is the runner alone.
 */
export interface IdleResult {
  windowMs: number;
  /** percent of one core over the window (summed over the runners). */
  cpuPercent: number;
  cpuMs: number;
  rssMiB: number;
  /** private resident memory (RssAnon); the rest of RSS is node-binary pages shared with every node process. */
  anonMiB: number;
  /** proportional set size: shared pages split among the processes sharing them. */
  pssMiB: number;
}

export interface ManyIdleResult extends IdleResult {
  runners: number;
  /** CPU and RSS per runner, on average. */
  perRunnerCpuPercent: number;
  perRunnerRssMiB: number;
}

/** Let a fresh runner answer one message, then give it `settleMs` to finish its start-up work and go quiet. */
export async function warmUp(session: RunnerSession, settleMs: number): Promise<void> {
  const { id } = session.insertChat('warm-up-end');
  await session.until('warm-up answered', () => session.isCompleted(id));
  await sleep(settleMs);
}

export async function measureIdle(session: RunnerSession, windowMs: number): Promise<IdleResult> {
  const { percent, cpuMs } = await cpuPercentOver([session.pid], windowMs);
  return { windowMs, cpuPercent: percent, cpuMs, ...memoryOf([session.pid]) };
}

/** Memory of `pids`, summed (NaN if one has exited). */
function memoryOf(pids: number[]): { rssMiB: number; anonMiB: number; pssMiB: number } {
  const sum = (read: (pid: number) => number | undefined): number => pids.reduce((total, pid) => total + (read(pid) ?? Number.NaN), 0);
  return { rssMiB: sum(rssMiB), anonMiB: sum(anonRssMiB), pssMiB: sum(pssMiB) };
}

/**
 * `count` idle runners of each mode at once, measured over the same window: total CPU over it and total RSS at its
 * end. Both modes share the window so that the fleet test costs one window, not two; an idle runner's CPU time is
 * its own, whoever else is running.
 */
export async function measureManyIdle(count: number, windowMs: number, settleMs: number): Promise<ByMode<ManyIdleResult>> {
  const fleets: ByMode<RunnerSession[]> = { watch: [], poll: [] };
  try {
    // Start in small groups: a hundred Node start-ups at once on two cores would only measure the scheduler.
    for (let i = 0; i < count; i += 5) {
      const group = Math.min(5, count - i);
      for (const mode of MODES) {
        fleets[mode].push(...(await Promise.all(Array.from({ length: group }, () => RunnerSession.start({ mode })))));
      }
    }
    await Promise.all([...fleets.watch, ...fleets.poll].map((session) => warmUp(session, 0)));
    await sleep(settleMs);
    const pids = (mode: WakeMode): number[] => fleets[mode].map((session) => session.pid);
    const [watch, poll] = await Promise.all(MODES.map((mode) => cpuPercentOver(pids(mode), windowMs)));
    const result = (mode: WakeMode, cpu: { percent: number; cpuMs: number }): ManyIdleResult => {
      const memory = memoryOf(pids(mode));
      return {
        windowMs,
        runners: count,
        cpuPercent: cpu.percent,
        cpuMs: cpu.cpuMs,
        ...memory,
        perRunnerCpuPercent: cpu.percent / count,
        perRunnerRssMiB: memory.rssMiB / count,
      };
    };
    return { watch: result('watch', watch!), poll: result('poll', poll!) };
  } finally {
    await Promise.all([...fleets.watch, ...fleets.poll].map((session) => session.close()));
  }
}
