import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { planCompaction, type CompactionPlanInput, type CompactionTasks, type PlanMessage } from '../src/runtime/tasks/compaction-plan.js';
import { planEdit, type EditPlanInput, type FileTasks } from '../src/runtime/tasks/file-edit.js';
import { CpuAdmission, defaultParallelism, WorkerTaskPool } from '../src/runtime/worker-pool/index.js';

/**
 * `npm run bench:compute`: what the built-in runtime's compute pools buy the runner's event loop, in one run.
 * 1. compaction planning of a 5 MB transcript (estimation, pruning, the cut, the summary request): event-loop delay
 *    p99 and max while it runs, on the main thread vs on the pool;
 * 2. 50 parallel edits of 35 kB files (matching after normalisation, diffs): the same, main thread vs pool.
 * The event loop is sampled by monitorEventLoopDelay (1 ms resolution) only while the work runs.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

function transcript(bytes: number): PlanMessage[] {
  const messages: PlanMessage[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const out = `result ${i} ${'lorem ipsum dolor sit amet '.repeat(200)}`;
    messages.push({ role: 'user', content: `question ${i}` });
    messages.push({ role: 'assistant', content: [{ type: 'toolCall', name: 'bash', arguments: { command: `cat file-${i}` } }], stopReason: 'toolUse', usage: { input: 10, output: 10, cacheRead: 0, cacheWrite: 0 } });
    messages.push({ role: 'toolResult', toolName: 'bash', content: [{ type: 'text', text: out }] });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `answer ${i}` }], stopReason: 'stop' });
    size += out.length + 40;
  }
  messages.push({ role: 'user', content: 'the latest question' });
  return messages;
}

async function measure(work: () => Promise<unknown>): Promise<{ p99: number; max: number; wall: number }> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  // a timer keeps the loop turning, so a blocked loop shows as delay
  const tick = setInterval(() => undefined, 1);
  h.enable();
  const start = performance.now();
  await work();
  const wall = performance.now() - start;
  // let the timer fire once more: a loop blocked until now records its delay
  await new Promise((resolve) => setTimeout(resolve, 2));
  h.disable();
  clearInterval(tick);
  return { p99: h.percentile(99) / 1e6, max: h.max / 1e6, wall };
}

function row(name: string, samples: { p99: number; max: number; wall: number }[]): void {
  const median = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  console.log(
    `${name.padEnd(44)} event-loop delay p99 ${median(samples.map((s) => s.p99)).toFixed(1).padStart(7)} ms, max ${median(samples.map((s) => s.max)).toFixed(1).padStart(7)} ms, wall ${median(samples.map((s) => s.wall)).toFixed(0).padStart(6)} ms`,
  );
}

async function main(): Promise<void> {
  const admission = new CpuAdmission(defaultParallelism());
  const compaction = new WorkerTaskPool<CompactionTasks>({ name: 'compaction', tasks: new URL('../src/runtime/tasks/compaction-plan.js', import.meta.url), admission });
  const files = new WorkerTaskPool<FileTasks>({ name: 'files', tasks: new URL('../src/runtime/tasks/file-edit.js', import.meta.url), admission });
  const messages = transcript(5 * 1024 * 1024);
  const input: CompactionPlanInput = { messages, contextWindow: 200_000, reserveTokens: 16_384, keepRecentTokens: 20_000, pruneBudgetTokens: 12_000 };
  const inputBytes = 5 * 1024 * 1024;
  await compaction.run('planCompaction', { input, inputBytes }); // warm worker
  const inline: Awaited<ReturnType<typeof measure>>[] = [];
  const pooled: Awaited<ReturnType<typeof measure>>[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    inline.push(await measure(async () => planCompaction(input)));
    pooled.push(await measure(() => compaction.run('planCompaction', { input, inputBytes })));
  }
  console.log(`compaction planning, ${messages.length} messages (5 MB), median of ${ROUNDS}:`);
  row('  main thread', inline);
  row('  compaction pool', pooled);

  const body = Array.from({ length: 1000 }, (_, i) => `const value${i} = \u201cstring ${i}\u201d;   `).join('\r\n');
  const edits: EditPlanInput[] = Array.from({ length: 50 }, (_, i) => ({
    path: `file-${i}.ts`,
    before: body,
    edits: [{ oldText: `const value${i * 10} = "string ${i * 10}";\nconst value${i * 10 + 1}`, newText: `const changed${i} = 1;\nconst value${i * 10 + 1}` }],
    maxBytes: 5 * 1024 * 1024,
  }));
  await files.run('planEdit', { input: edits[0]!, inputBytes: body.length });
  const editInline: Awaited<ReturnType<typeof measure>>[] = [];
  const editPooled: Awaited<ReturnType<typeof measure>>[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    editInline.push(await measure(async () => edits.map((e) => planEdit(e))));
    editPooled.push(await measure(() => Promise.all(edits.map((e) => files.run('planEdit', { input: e, inputBytes: body.length })))));
  }
  console.log(`50 parallel edits of ${Math.round(body.length / 1024)} kB files (normalised matches), median of ${ROUNDS}:`);
  row('  main thread', editInline);
  row(`  files pool (parallelism ${admission.limit})`, editPooled);
  await Promise.all([compaction.close(), files.close()]);
}

await main();
