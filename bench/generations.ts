import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { AgentGroup } from '../src/host/central-db/types.js';
import { groupRegistry, groupSelection, projectCatalogue } from '../src/host/generations/catalogue.js';
import { readCredentials } from '../src/host/generations/credentials.js';
import { GenerationPublisher } from '../src/host/generations/publisher.js';
import { SecretsStore } from '../src/host/secrets.js';

/**
 * `npm run bench:generations`: model-runtime generations, in one run.
 * 1. Publication of 1, 20 and 200 agent groups after a key rotation: wall time, and the host's event-loop delay p99
 *    while the pass runs (one group per event-loop turn), against the same groups built in one go (the baseline a
 *    host without turns would have). Target: p99 ≤ 20 ms.
 * 2. What a runner start costs: reading the published generation (`admit`) vs looking everything up again
 *    (selection, routes, the catalogue), median of many.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

function group(i: number): AgentGroup {
  return {
    id: `g${i}`,
    name: `group-${i}`,
    folder: `f${i}`,
    provider: i % 2 === 0 ? 'pincer' : 'auto',
    model: i % 3 === 0 ? 'openai/gpt-5' : 'anthropic/claude-sonnet-4-5',
    sessionMode: 'shared',
    timezone: 'UTC',
    configGeneration: 1,
    admins: [],
    triggerRules: { groups: 'mention', allowedUsers: [] },
    mcpServers: {},
    createdAt: '',
  };
}

const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

function setup(count: number): { publisher: GenerationPublisher; secrets: SecretsStore; groups: AgentGroup[] } {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-gen-'));
  const secrets = new SecretsStore(home);
  secrets.set('ANTHROPIC_API_KEY', 'sk-ant-bench-0');
  const groups = Array.from({ length: count }, (_, i) => group(i));
  const publisher = new GenerationPublisher({
    readCredentials: (previous) => readCredentials({}, () => secrets.read(), previous),
    groups: () => groups,
    hasExtensions: () => false,
    log: silent,
  });
  publisher.publishAllNow();
  return { publisher, secrets, groups };
}

async function delayed(work: () => Promise<void> | void): Promise<{ ms: number; p99: number; max: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  await new Promise((resolve) => setTimeout(resolve, 5)); // the first sample is taken before the work starts
  const started = performance.now();
  await work();
  const ms = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, 5)); // a loop blocked to the end records its delay now
  histogram.disable();
  return { ms, p99: histogram.percentile(99) / 1e6, max: histogram.max / 1e6 };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  console.log('model-runtime generations');
  for (const count of [1, 20, 200]) {
    const passes: { ms: number; p99: number; max: number }[] = [];
    const inline: { ms: number; p99: number; max: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const { publisher, secrets } = setup(count);
      secrets.set('ANTHROPIC_API_KEY', `sk-ant-bench-${round + 1}`);
      passes.push(await delayed(() => publisher.republish('bench')));
      const baseline = setup(count);
      baseline.secrets.set('ANTHROPIC_API_KEY', `sk-ant-bench-${round + 1}`);
      inline.push(await delayed(() => baseline.publisher.publishAllNow()));
    }
    const p99 = median(passes.map((p) => p.p99));
    console.log(
      `  ${p99 <= 20 ? 'PASS' : 'MISS'} ${String(count).padStart(3)} groups: publication ${median(passes.map((p) => p.ms)).toFixed(1)} ms, event-loop delay p99 ${p99.toFixed(1)} ms ` +
        `(max ${median(passes.map((p) => p.max)).toFixed(1)}) vs built in one go ${median(inline.map((p) => p.ms)).toFixed(1)} ms, p99 ${median(inline.map((p) => p.p99)).toFixed(1)} ms (target: p99 ≤ 20 ms)`,
    );
  }
  const { publisher, groups } = setup(20);
  const credentials = publisher.currentCredentials()!;
  const reads: number[] = [];
  const lookups: number[] = [];
  for (let i = 0; i < 200; i++) {
    const g = groups[i % groups.length]!;
    let started = performance.now();
    publisher.admit(g);
    reads.push(performance.now() - started);
    started = performance.now();
    groupSelection(g.provider, g.model, credentials);
    projectCatalogue(groupRegistry(g.model), { policy: g.provider, model: g.model, credentials, memo: new Map() });
    lookups.push(performance.now() - started);
  }
  const read = median(reads);
  const lookup = median(lookups);
  console.log(
    `  ${read < lookup ? 'PASS' : 'MISS'} a runner start reads the generation in ${(read * 1000).toFixed(1)} µs vs ${(lookup * 1000).toFixed(1)} µs looking it all up again (target: faster)`,
  );
}

await main();
