import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { measureBuiltin } from './builtin.js';
import { measureBurst } from './burst.js';
import { measureColdStart } from './cold-start.js';
import { measureFollowUp } from './followup.js';
import { measureHostStart } from './host-start.js';
import { closeFleets, keepFirst, measureIdleFleets, startIdleFleets } from './idle.js';
import { measureMcpSendMessage } from './mcp.js';
import { measureMcpStart } from './mcp-start.js';
import { measureObservability } from './observability.js';
import { measurePickup } from './pickup.js';
import { measurePlatformRoundTrip } from './platform.js';
import { measureSessionPort } from './session-port.js';
import { measureScale } from './scale.js';
import { scaleLost } from './report-scale.js';
import type { WakeMode } from '../src/db/wake.js';
import { buildRows, withSummaries, type BenchResults } from './report.js';
import { closeAllSessions, type ByMode } from './runner-session.js';
import { renderTable, toPrintedRow } from './table.js';
import { measureThroughput } from './throughput.js';

/**
 * `npm run bench [-- --quick] [-- --only pickup,burst]`: the numbers of docs/performance.md, for Pincer's wake-on-change runner
 * and, in the same run, for fixed-interval polling (PINCER_WAKE=poll) as the baseline. Real runner
 * processes, mock provider, temp session folders. Prints one table and writes it, with every sample, to
 * bench-results/. `--quick` is the CI size (under a minute); the full run stays under five minutes on two cores.
 */
const SIZES = {
  full: {
    observability: 40,
    builtin: 30,
    platform: 40,
    coldStart: 10,
    hostStart: 10,
    pickup: 200,
    pollRunners: 8,
    followUp: 40,
    followUpRunners: 8,
    burst: 1000,
    burstRuns: 3,
    idleMs: 30_000,
    sustained: 10_000,
    fleet: 20,
    mcp: 200,
    sessionPort: 40,
    idleSessions: 10,
    mcpStart: 10,
    scaleSessions: [100, 1000, 10_000],
    scaleActive: 100,
    scaleIdleMs: 60_000,
    scaleSettleMs: 5000,
    scaleBursts: [100, 500],
  },
  quick: {
    observability: 10,
    builtin: 5,
    platform: 10,
    coldStart: 2,
    hostStart: 4,
    pickup: 24,
    pollRunners: 8,
    followUp: 8,
    followUpRunners: 8,
    burst: 200,
    burstRuns: 1,
    idleMs: 3000,
    sustained: 500,
    fleet: 3,
    mcp: 50,
    sessionPort: 10,
    idleSessions: 3,
    mcpStart: 2,
    scaleSessions: [100],
    scaleActive: 5,
    scaleIdleMs: 1000,
    scaleSettleMs: 1000,
    scaleBursts: [5, 25],
  },
};
type Sizes = (typeof SIZES)['full'];

const GROUPS = [
  'cold-start',
  'pickup',
  'follow-up',
  'burst',
  'mcp',
  'mcp-start',
  'platform',
  'builtin',
  'observability',
  'session-port',
  'idle',
  'scale',
] as const;
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

async function bothModes<T>(measure: (mode: WakeMode) => Promise<T>): Promise<ByMode<T>> {
  return { watch: await measure('watch'), poll: await measure('poll') };
}

async function runGroups(only: Set<Group>, size: Sizes): Promise<BenchResults> {
  const results: BenchResults = {};
  // The idle fleets start first and sit idle while the other groups run (see idle.ts); the groups that time
  // milliseconds come after the bursts and cold starts, when the fleets' after-start work is over.
  const idle = only.has('idle') ? await timed(`starting ${size.fleet} idle runners of each mode`, () => startIdleFleets(size.fleet)) : undefined;
  try {
    if (only.has('burst')) {
      results.burst15 = await timed('burst of 15', () => bothModes((mode) => measureBurst(mode, 15)));
      results.burst = await timed(`burst of ${size.burst}`, () => bothModes((mode) => measureBurst(mode, size.burst, size.burstRuns)));
    }
    if (only.has('cold-start')) {
      results.coldStart = await timed('cold start', () => measureColdStart(size.coldStart));
      results.hostStart = await timed('host start', () => measureHostStart(size.hostStart));
    }
    if (only.has('follow-up')) {
      results.followUp = await timed('follow-up', () => bothModes((mode) => measureFollowUp(mode, size.followUp, size.followUpRunners)));
    }
    if (only.has('pickup')) {
      results.pickup = await timed('idle pickup', () => bothModes((mode) => measurePickup(mode, size.pickup, mode === 'poll' ? size.pollRunners : 1)));
    }
    if (only.has('mcp')) {
      results.mcp = await timed('MCP send_message', () => measureMcpSendMessage(size.mcp));
    }
    if (only.has('mcp-start')) {
      results.mcpStart = await timed("first model call with the user's MCP servers", () => measureMcpStart(size.mcpStart));
    }
    if (only.has('platform')) {
      results.platform = await timed('chat platform round trip', () => measurePlatformRoundTrip(size.platform));
    }
    if (only.has('session-port')) {
      results.sessionPort = await timed('session port, local vs session-serve', () => measureSessionPort(size.sessionPort, size.idleSessions));
    }
    if (only.has('builtin')) {
      results.builtin = await timed('built-in runtime', () => measureBuiltin(size.builtin));
    }
    if (only.has('observability')) {
      results.observability = await timed('metrics and tracing on vs off', () => measureObservability(size.observability));
    }
    if (only.has('scale')) {
      results.scale = await timed('host at scale', () =>
        measureScale(size.scaleSessions, size.scaleActive, size.scaleIdleMs, size.scaleBursts, { settleMs: size.scaleSettleMs, progress }),
      );
    }
    if (idle) {
      const measured = await timed('idle CPU and memory', () => measureIdleFleets(idle, size.idleMs));
      results.idle = measured.single;
      results.fleet = measured.fleet;
      const runners = await keepFirst(idle);
      results.throughput = await timed('sustained throughput', () => bothModes((mode) => measureThroughput(runners[mode], size.sustained, 200)));
    }
  } finally {
    if (idle) await closeFleets(idle);
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
  // Timings on a shared machine are not a reason to fail CI; a message left behind is a bug.
  const lost = [results.burst15, results.burst].flatMap((r) => (r ? [r.watch.leftBehind, r.poll.leftBehind] : []));
  if (lost.some((n) => n > 0) || scaleLost(results.scale) > 0) {
    process.stdout.write('FAIL: messages were left behind in a burst\n');
    process.exitCode = 1;
  }
}

await main();
