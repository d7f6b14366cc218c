import type { WakeMode } from '../src/db/wake.js';
import { anonRssMiB, cpuPercentOver, pssMiB, rssMiB, ussMiB } from './proc.js';
import { MODES, RunnerSession, type ByMode } from './runner-session.js';

/**
 * Idle cost: CPU (utime + stime of all threads, from /proc/<pid>/stat) over a window in which no message arrives,
 * and memory at its end (VmRSS and RssAnon from /proc/<pid>/status, PSS from /proc/<pid>/smaps_rollup). The mock
 * provider starts no SDK child, so this is the runner alone.
 *
 * A fleet of runners per mode is started and warmed up (one message each) before the latency groups run, and
 * measured after them, all in one window: so the window starts long after start-up and after the garbage collections
 * V8 runs in the first ~25 s after activity, which is what a runner waiting for its next message looks like. The
 * first runner of each fleet is "one runner"; it is then used for the sustained run.
 */
export interface IdleResult {
  windowMs: number;
  /** how long the runners had been idle when the window started. */
  idleBeforeMs: number;
  /** percent of one core over the window (summed over the runners). */
  cpuPercent: number;
  cpuMs: number;
  rssMiB: number;
  /** private resident memory (RssAnon); the rest of RSS is node-binary pages shared with every node process. */
  anonMiB: number;
  /** proportional set size: shared pages split among the processes sharing them. */
  pssMiB: number;
  /** unique set size: pages no other process maps. */
  ussMiB: number;
}

export interface FleetResult extends IdleResult {
  runners: number;
  /** CPU and RSS per runner, on average. */
  perRunnerCpuPercent: number;
  perRunnerRssMiB: number;
}

export interface IdleFleets {
  fleets: ByMode<RunnerSession[]>;
  warmedAt: number;
}

/** Let a runner answer one message, so every code path of a normal runner is loaded. */
export async function warmUp(session: RunnerSession): Promise<void> {
  const { id } = session.insertChat('warm-up-end');
  await session.until('warm-up answered', () => session.isCompleted(id));
}

/** Start `count` runners of each mode and warm them up. */
export async function startIdleFleets(count: number): Promise<IdleFleets> {
  const fleets: ByMode<RunnerSession[]> = { watch: [], poll: [] };
  try {
    // Small groups: a hundred Node start-ups at once on two cores would only measure the scheduler.
    for (let i = 0; i < count; i += 5) {
      const group = Math.min(5, count - i);
      for (const mode of MODES) {
        fleets[mode].push(...(await Promise.all(Array.from({ length: group }, () => RunnerSession.start({ mode })))));
      }
    }
    await Promise.all([...fleets.watch, ...fleets.poll].map((session) => warmUp(session)));
  } catch (err) {
    await closeFleets({ fleets, warmedAt: 0 });
    throw err;
  }
  return { fleets, warmedAt: performance.now() };
}

/** One window over every runner of both fleets: the first runner alone, and each fleet in total. */
export async function measureIdleFleets(
  { fleets, warmedAt }: IdleFleets,
  windowMs: number,
): Promise<{ single: ByMode<IdleResult>; fleet: ByMode<FleetResult> }> {
  const idleBeforeMs = performance.now() - warmedAt;
  const pids = (sessions: RunnerSession[]): number[] => sessions.map((session) => session.pid);
  const groups = [...MODES.map((mode) => pids(fleets[mode].slice(0, 1))), ...MODES.map((mode) => pids(fleets[mode]))];
  const cpu = await Promise.all(groups.map((group) => cpuPercentOver(group, windowMs)));
  const result = (group: number): IdleResult => ({
    windowMs,
    idleBeforeMs,
    cpuPercent: cpu[group]!.percent,
    cpuMs: cpu[group]!.cpuMs,
    ...memoryOf(groups[group]!),
  });
  const fleet = (group: number, mode: WakeMode): FleetResult => {
    const base = result(group);
    const runners = fleets[mode].length;
    return { ...base, runners, perRunnerCpuPercent: base.cpuPercent / runners, perRunnerRssMiB: base.rssMiB / runners };
  };
  return {
    single: { watch: result(0), poll: result(1) },
    fleet: { watch: fleet(2, 'watch'), poll: fleet(3, 'poll') },
  };
}

/** Stop every runner of the fleets but the first of each mode, which goes on to the sustained run. */
export async function keepFirst({ fleets }: IdleFleets): Promise<ByMode<RunnerSession>> {
  await Promise.all([...fleets.watch.slice(1), ...fleets.poll.slice(1)].map((session) => session.close()));
  return { watch: fleets.watch[0]!, poll: fleets.poll[0]! };
}

export async function closeFleets({ fleets }: IdleFleets): Promise<void> {
  await Promise.all([...fleets.watch, ...fleets.poll].map((session) => session.close()));
}

/** Memory of `pids`, summed (NaN if one has exited). */
function memoryOf(pids: number[]): { rssMiB: number; anonMiB: number; pssMiB: number; ussMiB: number } {
  const sum = (read: (pid: number) => number | undefined): number => pids.reduce((total, pid) => total + (read(pid) ?? Number.NaN), 0);
  return { rssMiB: sum(rssMiB), anonMiB: sum(anonRssMiB), pssMiB: sum(pssMiB), ussMiB: sum(ussMiB) };
}
