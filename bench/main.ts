import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { measureBurst } from './burst.js';
import { measureColdStart } from './cold-start.js';
import { measureFollowUp } from './followup.js';
import { measureIdle, measureManyIdle, warmUp } from './idle.js';
import { measurePickup } from './pickup.js';
import { buildRows, withSummaries, type BenchResults } from './report.js';
import { closeAllSessions, RunnerSession } from './runner-session.js';
import { renderTable, toPrintedRow } from './table.js';
import { measureThroughput } from './throughput.js';

/**
 * `npm run bench [-- --quick] [-- --only pickup,burst]`: the numbers of SPEC §8, for Pincer's wake-on-change runner
 * and, in the same run, for the seed's fixed-interval polling (PINCER_WAKE=poll) as the baseline. Real runner
 * processes, mock provider, temp session folders. Prints one table and writes it, with every sample, to
 * bench-results/. `--quick` is the CI size (under a minute); the full run stays under five minutes on two cores.
 */
const SIZES = {
  full: { coldStart: 10, pickup: 200, pollRunners: 8, followUp: 40, followUpRunners: 4, burst: 1000, idleMs: 30_000, settleMs: 2000, sustained: 10_000, manyIdle: 50, manyIdleMs: 30_000, mcp: 200 },
  quick: { coldStart: 2, pickup: 24, pollRunners: 8, followUp: 8, followUpRunners: 8, burst: 200, idleMs: 5000, settleMs: 500, sustained: 500, manyIdle: 3, manyIdleMs: 3000, mcp: 50 },
};
type Sizes = (typeof SIZES)['full'];

const GROUPS = ['cold-start', 'pickup', 'follow-up', 'burst', 'idle', 'many-idle'] as const;
type Group = (typeof GROUPS)[number];

function parseArgs(argv: string[]): { quick: boolean; only: Set<Group> } {
  const quick = argv.includes('--quick');
  const onlyArg = argv.find((arg) => arg.startsWith('--only='))?.slice('--only='.length);
  const only = new Set<Group>();
  for (const name of onlyArg ? onlyArg.split(',') : GROUPS) {
    const group = GROUPS.find((g) => g === name);
    if (!group) throw new Error(`unknown group "${name}" (known: ${GROUPS.join(', ')})`);
    only.add(group);
  }
  return { quick, only };
}

function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

async function timed<T>(what: string, run: () => Promise<T>): Promise<T> {
  const started = performance.now();
  progress(`${what} …`);
  const value = await run();
  progress(`${what}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return value;
}

async function runGroups(only: Set<Group>, size: Sizes): Promise<BenchResults> {
  const results: BenchResults = {};
  if (only.has('cold-start')) {
    results.coldStart = await timed('cold start', async () => ({
      watch: await measureColdStart('watch', size.coldStart),
      poll: await measureColdStart('poll', size.coldStart),
    }));
  }
  if (only.has('pickup')) {
    results.pickup = await timed('idle pickup', async () => ({
      watch: await measurePickup('watch', size.pickup, 1),
      poll: await measurePickup('poll', size.pickup, size.pollRunners),
    }));
  }
  if (only.has('follow-up')) {
    results.followUp = await timed('follow-up', async () => ({
      watch: await measureFollowUp('watch', size.followUp, size.followUpRunners),
      poll: await measureFollowUp('poll', size.followUp, size.followUpRunners),
    }));
  }
  if (only.has('burst')) {
    results.burst15 = await timed('burst of 15', async () => ({ watch: await measureBurst('watch', 15), poll: await measureBurst('poll', 15) }));
    results.burst = await timed(`burst of ${size.burst}`, async () => ({
      watch: await measureBurst('watch', size.burst),
      poll: await measureBurst('poll', size.burst),
    }));
  }
  if (only.has('idle')) {
    // One runner per mode, idle side by side over the same window, then each driven through the sustained run.
    const [watch, poll] = await Promise.all([RunnerSession.start({ mode: 'watch' }), RunnerSession.start({ mode: 'poll' })]);
    try {
      await Promise.all([warmUp(watch, size.settleMs), warmUp(poll, size.settleMs)]);
      results.idle = await timed('idle CPU and RSS', async () => {
        const [w, p] = await Promise.all([measureIdle(watch, size.idleMs), measureIdle(poll, size.idleMs)]);
        return { watch: w, poll: p };
      });
      results.throughput = await timed('sustained throughput', async () => ({
        watch: await measureThroughput(watch, size.sustained, 200, size.settleMs),
        poll: await measureThroughput(poll, size.sustained, 200, size.settleMs),
      }));
    } finally {
      await Promise.all([watch.close(), poll.close()]);
    }
  }
  if (only.has('many-idle')) {
    results.manyIdle = await timed(`${size.manyIdle} idle runners of each mode`, () =>
      measureManyIdle(size.manyIdle, size.manyIdleMs, size.settleMs),
    );
  }
  return results;
}

function gitCommit(): string | undefined {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

async function main(): Promise<void> {
  const { quick, only } = parseArgs(process.argv.slice(2));
  const size = quick ? SIZES.quick : SIZES.full;
  const started = performance.now();
  const loadBefore = os.loadavg();
  process.once('SIGINT', () => void closeAllSessions().finally(() => process.exit(130)));
  let results: BenchResults;
  try {
    results = await runGroups(only, size);
  } finally {
    await closeAllSessions();
  }
  const environment = {
    date: new Date().toISOString(),
    commit: gitCommit(),
    node: process.version,
    cpus: os.availableParallelism(),
    cpuModel: os.cpus()[0]?.model,
    loadAverageBefore: loadBefore.map((x) => Number(x.toFixed(2))),
    loadAverageAfter: os.loadavg().map((x) => Number(x.toFixed(2))),
    seconds: Number(((performance.now() - started) / 1000).toFixed(1)),
    quick,
    sizes: size,
  };
  const rows = buildRows(results).map(toPrintedRow);
  const table = renderTable(rows);
  const dir = path.resolve('bench-results');
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `bench-${environment.date.replace(/[:.]/g, '-')}${quick ? '-quick' : ''}.json`);
  fs.writeFileSync(file, JSON.stringify({ environment, table: rows, results: withSummaries(results) }, null, 2) + '\n');
  process.stdout.write(`${table}\n\n`);
  process.stdout.write(
    `${environment.cpus} cores (${environment.cpuModel ?? 'unknown CPU'}), Node ${environment.node}, load average ` +
      `${environment.loadAverageBefore.join(' ')} before / ${environment.loadAverageAfter.join(' ')} after; ` +
      `${environment.seconds} s${quick ? ' (--quick)' : ''}\n`,
  );
  process.stdout.write(`results: ${path.relative(process.cwd(), file)}\n`);
  const missed = rows.filter((row) => row.verdict === 'MISS');
  if (missed.length > 0) process.stdout.write(`MISS: ${missed.map((row) => row.metric).join('; ')}\n`);
}

await main();
