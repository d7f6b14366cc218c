import type { AgentTool } from '@mariozechner/pi-agent-core';
import { Type } from '@mariozechner/pi-ai';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { codeModeLimits, codeModeTools, stopPrograms, type Programs } from '../src/providers/pincer/tools/code-mode.js';
import type { CodeTasks } from '../src/runtime/tasks/code-mode.js';
import { planCompaction, type CompactionPlanInput, type CompactionTasks, type PlanMessage } from '../src/runtime/tasks/compaction-plan.js';
import { planEdit, type EditPlanInput, type FileTasks } from '../src/runtime/tasks/file-edit.js';
import { CpuAdmission, defaultParallelism, WorkerTaskPool } from '../src/runtime/worker-pool/index.js';

/**
 * `npm run bench:compute`: what the built-in runtime's compute pools buy the runner's event loop, in one run.
 * 1. compaction planning of a 5 MB transcript (estimation, pruning, the cut, the summary request): event-loop delay
 *    p99 and max while it runs, on the main thread vs on the pool;
 * 2. 50 parallel edits of 35 kB files (matching after normalisation, diffs): the same, main thread vs pool;
 * 3. code mode's `exec` round trip for a program calling one tool, vs the same tool called directly.
 * The event loop is sampled by monitorEventLoopDelay (1 ms resolution) only while the work runs.
 */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

function transcript(bytes: number): PlanMessage[] {
  const messages: PlanMessage[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const out = `result ${i} ${'lorem ipsum dolor sit amet '.repeat(200)}`;
    messages.push({ role: 'user', content: `question ${i}` });
    messages.push({
      role: 'assistant',
      content: [{ type: 'toolCall', name: 'bash', arguments: { command: `cat file-${i}` } }],
      stopReason: 'toolUse',
      usage: { input: 10, output: 10, cacheRead: 0, cacheWrite: 0 },
    });
    messages.push({ role: 'toolResult', toolName: 'bash', content: [{ type: 'text', text: out }] });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `answer ${i}` }], stopReason: 'stop' });
    size += out.length + 40;
  }
  messages.push({ role: 'user', content: 'the latest question' });
  return messages;
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Event-loop delay while `work` runs. monitorEventLoopDelay records a sample when its timer fires, as the time since
 * the previous firing: a loop blocked before the timer's first firing records nothing, which is how an earlier
 * version of this bench showed 0 ms for work that held the loop for seconds. So the histogram runs for a while first,
 * is reset, and the work starts in a later turn of the loop; after it, the timer fires again to record the last block.
 */
async function measure(work: () => Promise<unknown>): Promise<{ p99: number; max: number; wall: number }> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await sleep(25);
  h.reset();
  await tick();
  const start = performance.now();
  await work();
  const wall = performance.now() - start;
  await sleep(5);
  h.disable();
  if (h.count === 0) throw new Error('the event-loop histogram recorded no sample; the measurement is void');
  return { p99: h.percentile(99) / 1e6, max: h.max / 1e6, wall };
}

const median = (xs: number[]): number => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function row(name: string, samples: { p99: number; max: number; wall: number }[]): number {
  const p99 = median(samples.map((s) => s.p99));
  console.log(
    `${name.padEnd(44)} event-loop delay p99 ${p99.toFixed(1).padStart(7)} ms, max ${median(samples.map((s) => s.max))
      .toFixed(1)
      .padStart(7)} ms, wall ${median(samples.map((s) => s.wall))
      .toFixed(0)
      .padStart(6)} ms`,
  );
  return p99;
}

/** PASS when the pool's p99 is at most half the main thread's, measured in this same run. */
function verdict(what: string, inline: number, pooled: number): void {
  console.log(
    `  ${pooled <= inline / 2 ? 'PASS' : 'MISS'} ${what}: pool p99 ${pooled.toFixed(1)} ms vs main thread ${inline.toFixed(1)} ms (target: at most half)`,
  );
}

async function main(): Promise<void> {
  const admission = new CpuAdmission(defaultParallelism());
  const compaction = new WorkerTaskPool<CompactionTasks>({
    name: 'compaction',
    tasks: new URL('../src/runtime/tasks/compaction-plan.js', import.meta.url),
    admission,
  });
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
  verdict('compaction', row('  main thread', inline), row('  compaction pool', pooled));

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
    // planned on the main thread, each edit in its own turn of the loop (the most the loop could breathe between
    // parallel tool calls; plans that land in the same turn would block it for their sum)
    editInline.push(
      await measure(async () => {
        for (const e of edits) {
          await tick();
          planEdit(e);
        }
      }),
    );
    editPooled.push(await measure(() => Promise.all(edits.map((e) => files.run('planEdit', { input: e, inputBytes: body.length })))));
  }
  console.log(`50 parallel edits of ${Math.round(body.length / 1024)} kB files (normalised matches), median of ${ROUNDS}:`);
  verdict('edits', row('  main thread', editInline), row(`  files pool (parallelism ${admission.limit})`, editPooled));
  await Promise.all([compaction.close(), files.close()]);
  await execRoundTrip(admission);
}

/** `exec` of a program that calls one tool (two sandbox slices: the call, then the replay with its result) vs that tool called directly. */
async function execRoundTrip(admission: CpuAdmission): Promise<void> {
  const code = new WorkerTaskPool<CodeTasks>({ name: 'code', tasks: new URL('../src/runtime/tasks/code-mode.js', import.meta.url), admission });
  const echo: AgentTool = {
    name: 'echo',
    label: 'echo',
    description: 'answers with its argument',
    parameters: Type.Object({ text: Type.String() }),
    execute: async (_id, params) => ({ content: [{ type: 'text', text: (params as { text: string }).text }], details: {} }),
  };
  const programs: Programs = new Map();
  const [exec] = codeModeTools({
    tools: [echo],
    pool: code,
    limits: codeModeLimits({}, 30_000),
    log: { debug() {}, info() {}, warn() {}, error() {} },
    programs,
  });
  const runs = ROUNDS * 10;
  const timeOf = async (call: () => Promise<unknown>): Promise<number[]> => {
    await call(); // warm
    const ms: number[] = [];
    for (let i = 0; i < runs; i++) {
      const start = performance.now();
      await call();
      ms.push(performance.now() - start);
    }
    return ms;
  };
  const viaExec = await timeOf(() => exec!.execute('b', { code: 'return await tools.echo({ text: "hi" })' } as never));
  const direct = await timeOf(() => echo.execute('b', { text: 'hi' } as never));
  console.log(`exec round trip, a program calling one tool vs the tool called directly, median of ${runs}:`);
  console.log(
    `  ${'exec (two sandbox slices)'.padEnd(42)} ${median(viaExec).toFixed(2).padStart(8)} ms (p90 ${viaExec.sort((a, b) => a - b)[Math.floor(runs * 0.9)]!.toFixed(2)} ms)`,
  );
  console.log(`  ${'direct tool call'.padEnd(42)} ${median(direct).toFixed(2).padStart(8)} ms`);
  console.log(
    `  ${median(viaExec) <= 50 ? 'PASS' : 'MISS'} exec adds ${(median(viaExec) - median(direct)).toFixed(1)} ms to a tool call (target: exec at most 50 ms)`,
  );
  stopPrograms(programs);
  await code.close();
}

await main();
