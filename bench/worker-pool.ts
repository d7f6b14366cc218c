import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { AttachmentCodec } from '../src/runtime/attachments.js';
import type { AttachmentTasks } from '../src/runtime/tasks/attachments.js';
import { CpuAdmission, defaultParallelism, WorkerTaskPool } from '../src/runtime/worker-pool/index.js';

/**
 * `node dist/bench/worker-pool.js`: the worker-task pool's cost and benefit on this machine.
 * 1. overhead per empty task (sequential, warm worker): median and p99 of 1,000;
 * 2. attachment encoding (base64 of files): MB/s inline on the main thread vs through the pool at the default
 *    parallelism and at 2, with the longest time the main thread could run nothing else (what the poll loop feels).
 */
type BenchTasks = { empty: { input: null; output: null } };

const FILES = Number(process.env.BENCH_FILES ?? 24);
const FILE_MB = Number(process.env.BENCH_FILE_MB ?? 8);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

async function emptyTaskOverhead(): Promise<void> {
  const pool = new WorkerTaskPool<BenchTasks>({
    name: 'bench',
    tasks: new URL('./worker-tasks.js', import.meta.url),
    admission: new CpuAdmission(1),
  });
  for (let i = 0; i < 100; i++) await pool.run('empty', { input: null, inputBytes: 0 });
  const samples: number[] = [];
  for (let i = 0; i < 1000; i++) {
    const start = performance.now();
    await pool.run('empty', { input: null, inputBytes: 0 });
    samples.push(performance.now() - start);
  }
  await pool.close();
  samples.sort((a, b) => a - b);
  const at = (q: number): number => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  console.log(`empty task, warm worker, 1,000 runs: median ${(at(0.5) * 1000).toFixed(0)} µs, p99 ${(at(0.99) * 1000).toFixed(0)} µs`);
}

async function encodingThroughput(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-'));
  try {
    const files: string[] = [];
    for (let i = 0; i < FILES; i++) {
      const file = path.join(dir, `f${i}.bin`);
      const bytes = Buffer.alloc(FILE_MB * 1024 * 1024);
      for (let j = 0; j < bytes.length; j += 4096) bytes[j] = (i + j) & 0xff;
      fs.writeFileSync(file, bytes);
      files.push(file);
    }
    const totalMb = FILES * FILE_MB;
    const once = async (codec: AttachmentCodec): Promise<{ mbPerSecond: number; blockedMs: number }> => {
      // The longest gap between ticks of a 1 ms timer: how long the main thread was unable to run anything else.
      let last = performance.now();
      let maxGap = 0;
      const ticker = setInterval(() => {
        const now = performance.now();
        maxGap = Math.max(maxGap, now - last);
        last = now;
      }, 1);
      const start = performance.now();
      await Promise.all(files.map((file) => codec.encodeFile(file)));
      const seconds = (performance.now() - start) / 1000;
      await new Promise((resolve) => setTimeout(resolve, 5));
      clearInterval(ticker);
      return { mbPerSecond: totalMb / seconds, blockedMs: maxGap };
    };
    const run = async (label: string, codec: AttachmentCodec, close?: () => Promise<void>): Promise<void> => {
      await codec.encodeFile(files[0]!); // warm up (starts a worker when pooled)
      const rounds: { mbPerSecond: number; blockedMs: number }[] = [];
      for (let i = 0; i < ROUNDS; i++) rounds.push(await once(codec));
      await close?.();
      const median = (values: number[]): number => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      console.log(
        `${label.padEnd(24)} ${median(rounds.map((r) => r.mbPerSecond))
          .toFixed(0)
          .padStart(5)} MB/s, main thread blocked up to ` +
          `${median(rounds.map((r) => r.blockedMs)).toFixed(0)} ms at a time (medians of ${ROUNDS} rounds of ${FILES} × ${FILE_MB} MiB)`,
      );
    };
    await run('inline (main thread)', new AttachmentCodec(undefined));
    for (const parallelism of [...new Set([defaultParallelism(), 2])]) {
      const pool = new WorkerTaskPool<AttachmentTasks>({
        name: 'attachments',
        tasks: new URL('../src/runtime/tasks/attachments.js', import.meta.url),
        admission: new CpuAdmission(parallelism),
      });
      await run(`pool, parallelism ${parallelism}`, new AttachmentCodec(pool, 1), () => pool.close());
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`worker-pool bench on ${os.availableParallelism()} cores (default parallelism ${defaultParallelism()})`);
await emptyTaskOverhead();
await encodingThroughput();
