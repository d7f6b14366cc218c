import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CpuAdmission,
  WorkerTaskPool,
  isWorkerTaskError,
  liveWorkerCount,
  subscribeTaskEvents,
  type WorkerPoolOptions,
  type WorkerTaskEvent,
} from '../src/runtime/worker-pool/index.js';
import { inheritableExecArgv } from '../src/runtime/worker-pool/pool.js';
import { Gates, WORKER_TASKS, type TestTasks } from './support/worker-gates.js';
import { waitFor } from './support/wait.js';

const pools: WorkerTaskPool<TestTasks>[] = [];
const gates: Gates[] = [];

function makePool(options: Partial<WorkerPoolOptions> = {}): WorkerTaskPool<TestTasks> {
  // Parallelism is pinned per test: never the machine's core count.
  const pool = new WorkerTaskPool<TestTasks>({ name: 'test', tasks: WORKER_TASKS, admission: new CpuAdmission(1), ...options });
  pools.push(pool);
  return pool;
}

function makeGates(): Gates {
  const g = new Gates();
  gates.push(g);
  return g;
}

/** The rejection of `promise` (fails the test if it resolves). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (err: unknown) => err,
  );
}

afterEach(async () => {
  for (const g of gates.splice(0)) g.openAll();
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  // Every worker any test started has exited.
  expect(liveWorkerCount()).toBe(0);
});

describe('WorkerTaskPool', () => {
  it('runs a task on a worker thread and reuses the worker', async () => {
    const pool = makePool();
    expect(await pool.run('echo', { input: { a: [1, 2] }, inputBytes: 10 })).toEqual({ a: [1, 2] });
    expect(await pool.run('echo', { input: 'again', inputBytes: 5 })).toBe('again');
    expect(pool.stats).toMatchObject({ workers: 1, idleWorkers: 1, pendingTasks: 0, pendingBytes: 0 });
  });

  it('builds the input with prepare() only once the task is admitted', async () => {
    const pool = makePool();
    let prepared = 0;
    const value = await pool.run('echo', { inputBytes: 3, prepare: () => ((prepared += 1), { input: 'abc' }) });
    expect(value).toBe('abc');
    expect(prepared).toBe(1);
  });

  it.each([
    { limit: 'maxPendingTasks', options: { maxPendingTasks: 2 }, inputBytes: 1 },
    { limit: 'maxPendingBytes', options: { maxPendingBytes: 100 }, inputBytes: 50 },
  ] as const)('refuses work over $limit at once, before building its input', async ({ limit, options, inputBytes }) => {
    const pool = makePool(options);
    const g = makeGates();
    // One running (holding the only CPU permit), one queued: the pool is full.
    const running = pool.run('hold', { input: g.input(0), inputBytes });
    const queued = pool.run('hold', { input: g.input(1), inputBytes });
    await waitFor('the first task to start', () => g.started(0));
    let prepared = false;
    const refused = await rejection(pool.run('echo', { inputBytes, prepare: () => ((prepared = true), { input: 'never built' }) }));
    expect(isWorkerTaskError(refused, 'overloaded')).toBe(true);
    expect(isWorkerTaskError(refused) && refused.details.limit?.name).toBe(limit);
    expect(prepared).toBe(false);
    expect(pool.stats.pendingTasks).toBe(2);

    g.openAll();
    expect(await running).toBe(0);
    expect(await queued).toBe(1);
    // The reservations were released: the pool admits work again.
    expect(pool.stats).toMatchObject({ pendingTasks: 0, pendingBytes: 0 });
    expect(await pool.run('echo', { input: 'ok', inputBytes })).toBe('ok');
  });

  it('shares one CPU admission across pools in FIFO order', async () => {
    const admission = new CpuAdmission(1);
    const a = makePool({ name: 'a', admission });
    const b = makePool({ name: 'b', admission });
    const g = makeGates();
    const first = a.run('hold', { input: g.input(0), inputBytes: 1 });
    await waitFor('a#0 to start', () => g.started(0));
    const second = b.run('hold', { input: g.input(1), inputBytes: 1 });
    const third = a.run('hold', { input: g.input(2), inputBytes: 1 });
    expect(admission.waiting).toBe(2);

    g.open(0);
    await waitFor('b#1 to start', () => g.started(1));
    // Pool a's second task came later: it waits although pool a has an idle worker.
    expect(g.started(2)).toBe(false);
    expect(admission.inUse).toBe(1);
    g.open(1);
    await waitFor('a#2 to start', () => g.started(2));
    g.open(2);
    expect(await Promise.all([first, second, third])).toEqual([0, 1, 2]);
  });

  it.each([
    { how: 'timeout', start: (pool: WorkerTaskPool<TestTasks>, g: Gates) => pool.run('hold', { input: g.input(0), inputBytes: 1, timeoutMs: 20 }) },
    {
      how: 'abort',
      start: (pool: WorkerTaskPool<TestTasks>, g: Gates) => {
        const controller = new AbortController();
        void waitFor('started', () => g.started(0)).then(() => controller.abort(new Error('cancelled by test')));
        return pool.run('hold', { input: g.input(0), inputBytes: 1, signal: controller.signal });
      },
    },
  ])('on $how, stops the worker and keeps the permit until it has exited', async ({ how, start }) => {
    const pool = makePool();
    const g = makeGates();
    const stopped = start(pool, g);
    // Queued behind the stuck task: it may only start once the stuck worker is gone.
    const next = pool.run('hold', { input: g.input(1), inputBytes: 1 });
    const err = await rejection(stopped);
    if (how === 'timeout') expect(isWorkerTaskError(err, 'timeout')).toBe(true);
    else expect((err as Error).message).toBe('cancelled by test');

    await waitFor('the queued task to start', () => g.started(1));
    // Only the queued task's worker is alive: the stopped one exited before the permit moved on.
    expect(liveWorkerCount()).toBe(1);
    g.open(1);
    expect(await next).toBe(1);
  });

  it('drops a task aborted while queued without building its input', async () => {
    const pool = makePool();
    const g = makeGates();
    const running = pool.run('hold', { input: g.input(0), inputBytes: 1 });
    await waitFor('the first task to start', () => g.started(0));
    const controller = new AbortController();
    let prepared = false;
    const queued = pool.run('echo', {
      inputBytes: 7,
      signal: controller.signal,
      prepare: () => ((prepared = true), { input: 'x' }),
    });
    expect(pool.stats.pendingBytes).toBe(8);
    controller.abort(new Error('never mind'));
    expect(((await rejection(queued)) as Error).message).toBe('never mind');
    expect(prepared).toBe(false);
    expect(pool.stats.pendingBytes).toBe(1);
    g.open(0);
    expect(await running).toBe(0);
  });

  it.each([
    { task: 'fail' as const, input: 'boom', message: 'task "fail" failed: boom' },
    { task: 'exit' as const, input: 3, message: 'worker of task "exit" died: exited with code 3' },
    { task: 'missing' as const, input: null, message: 'task "missing" failed: no task "missing"' },
  ])('rejects with code failed when $task', async ({ task, input, message }) => {
    const pool = makePool();
    const err = await rejection(pool.run(task, { input, inputBytes: 1 }));
    expect(isWorkerTaskError(err, 'failed')).toBe(true);
    expect((err as Error).message).toContain(message);
    // The pool still works afterwards.
    expect(await pool.run('echo', { input: 1, inputBytes: 1 })).toBe(1);
  });

  it('fails with code unavailable once closed, including queued tasks', async () => {
    const pool = makePool();
    const g = makeGates();
    const running = pool.run('hold', { input: g.input(0), inputBytes: 1 });
    await waitFor('the first task to start', () => g.started(0));
    const queued = pool.run('echo', { input: 1, inputBytes: 1 });
    await pool.close();
    expect(isWorkerTaskError(await rejection(running), 'unavailable')).toBe(true);
    expect(isWorkerTaskError(await rejection(queued), 'unavailable')).toBe(true);
    expect(isWorkerTaskError(await rejection(pool.run('echo', { input: 1, inputBytes: 1 })), 'unavailable')).toBe(true);
    expect(liveWorkerCount()).toBe(0);
  });

  it('fails a task whose prepare() throws, releasing its reservation', async () => {
    const pool = makePool();
    const err = await rejection(
      pool.run('echo', {
        inputBytes: 9,
        prepare: () => {
          throw new Error('disk on fire');
        },
      }),
    );
    expect(isWorkerTaskError(err, 'failed')).toBe(true);
    expect((err as Error).message).toBe('preparing the input of "echo" failed: disk on fire');
    expect(pool.stats).toMatchObject({ pendingTasks: 0, pendingBytes: 0, workers: 0 });
  });

  it('transfers the buffers prepare() lists instead of copying them', async () => {
    const pool = makePool();
    const buffer = new Uint8Array([1, 2, 3]).buffer;
    const echoed = await pool.run('echo', { inputBytes: 3, prepare: () => ({ input: buffer, transfer: [buffer] }) });
    expect(new Uint8Array(echoed as ArrayBuffer)).toEqual(new Uint8Array([1, 2, 3]));
    // Moved to the worker: the sender's buffer is detached.
    expect(buffer.byteLength).toBe(0);
  });

  it.each([0, -1, 1.5])('rejects a CPU admission limit of %s', (limit) => {
    expect(() => new CpuAdmission(limit)).toThrow(RangeError);
  });

  it.each([-1, Number.NaN])('refuses an inputBytes of %s with code failed', async (inputBytes) => {
    const pool = makePool();
    const err = await rejection(pool.run('echo', { input: 1, inputBytes }));
    expect(isWorkerTaskError(err, 'failed')).toBe(true);
    expect(pool.stats.pendingTasks).toBe(0);
  });

  it('fails with code unavailable when the task module does not exist', async () => {
    const pool = makePool({ tasks: new URL('./support/no-such-tasks.mjs', import.meta.url) });
    const err = await rejection(pool.run('echo', { input: 1, inputBytes: 1 }));
    expect(isWorkerTaskError(err, 'unavailable')).toBe(true);
    expect((err as Error).message).toContain('no-such-tasks.mjs');
  });

  it('lets idle workers exit after the idle timeout', async () => {
    const pool = makePool({ idleTimeoutMs: 20 });
    await pool.run('echo', { input: 1, inputBytes: 1 });
    expect(liveWorkerCount()).toBe(1);
    await waitFor('the idle worker to exit', () => liveWorkerCount() === 0);
    expect(pool.stats.workers).toBe(0);
    // A new task starts a new worker.
    expect(await pool.run('echo', { input: 2, inputBytes: 1 })).toBe(2);
  });

  it('never keeps the process alive with an idle worker', async () => {
    const poolModule = new URL('../dist/src/runtime/worker-pool/pool.js', import.meta.url).href;
    const script = `
      const { WorkerTaskPool } = await import(${JSON.stringify(poolModule)});
      const pool = new WorkerTaskPool({ name: 'child', tasks: new URL(${JSON.stringify(WORKER_TASKS.href)}), idleTimeoutMs: 3600000 });
      console.log(await pool.run('echo', { input: 'done', inputBytes: 4 }));`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(out.trim()).toBe('done');
    expect(code).toBe(0);
    expect(fileURLToPath(poolModule)).toContain('dist');
  });

  it.each([
    ["V8 flags workers reject (the runner's)", ['--max-semi-space-size=1', '--liftoff-only']],
    ['several rejected flags with accepted ones', ['--no-warnings', '--max-old-space-size=512', '--expose-gc', '--stack-size=900']],
    ['only accepted flags', ['--no-warnings', '--enable-source-maps']],
  ])('starts workers in a process started with %s', async (_name, flags) => {
    const poolModule = new URL('../dist/src/runtime/worker-pool/pool.js', import.meta.url).href;
    const script = `
      const { WorkerTaskPool } = await import(${JSON.stringify(poolModule)});
      const pool = new WorkerTaskPool({ name: 'child', tasks: new URL(${JSON.stringify(WORKER_TASKS.href)}) });
      console.log(await pool.run('echo', { input: 'first', inputBytes: 5 }), await pool.run('echo', { input: 'second', inputBytes: 6 }));
      await pool.close();`;
    const child = spawn(process.execPath, [...flags, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect({ out: out.trim(), err, code }).toEqual({ out: 'first second', err: '', code: 0 });
  });

  it("keeps the parent flags a worker accepts and drops the main script's own", () => {
    expect(inheritableExecArgv(['--input-type=module', '-e', 'x()', '--conditions=dev', '-p', 'y', '--eval=z', '--no-warnings'])).toEqual([
      '--conditions=dev',
      '--no-warnings',
    ]);
  });

  it('publishes timings and counts on pincer.worker.task, never inputs', async () => {
    const pool = makePool({ maxPendingTasks: 1 });
    const events: WorkerTaskEvent[] = [];
    const unsubscribe = subscribeTaskEvents((event) => events.push(event));
    try {
      await pool.run('echo', { input: 'top-secret-input', inputBytes: 16 });
      const g = makeGates();
      const running = pool.run('hold', { input: g.input(0), inputBytes: 1 });
      await rejection(pool.run('echo', { input: 'x', inputBytes: 1 }));
      g.open(0);
      await running;
    } finally {
      unsubscribe();
    }
    expect(events.map((e) => `${e.task}:${e.outcome}`)).toEqual(['echo:ok', 'echo:overloaded', 'hold:ok']);
    expect(events[0]).toMatchObject({ pool: 'test', inputBytes: 16, pendingTasks: 0, pendingBytes: 0, coldStart: true });
    expect(events[1]).toMatchObject({ pendingTasks: 1 });
    for (const key of ['queueMs', 'prepareMs', 'runMs'] as const) expect(events[0]![key]).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(events)).not.toContain('top-secret-input');
  });
});
