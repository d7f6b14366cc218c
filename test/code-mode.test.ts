import type { AgentTool } from '@mariozechner/pi-agent-core';
import { Type } from '@mariozechner/pi-ai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { codeModeLimits, codeModeTools, stopPrograms, type Programs } from '../src/providers/pincer/tools/code-mode.js';
import { Confinement } from '../src/providers/pincer/tools/confine.js';
import { MutationQueue, poolPlanner } from '../src/providers/pincer/tools/edit.js';
import { fileTools } from '../src/providers/pincer/tools/files.js';
import { toolLimits } from '../src/providers/pincer/tools/limits.js';
import { runProgram, type CodeTasks, type ProgramSliceInput } from '../src/runtime/tasks/code-mode.js';
import type { FileTasks } from '../src/runtime/tasks/file-edit.js';
import { CpuAdmission, WorkerTaskPool, liveWorkerCount } from '../src/runtime/worker-pool/index.js';
import { createLogger } from '../src/shared/log.js';

/**
 * Code mode on real worker threads: the QuickJS sandbox (no host objects, memory and time limits, guest errors with
 * their stack), the replay of a program's tool calls slice by slice, parallel calls, a handle that `wait` resumes, and
 * one CPU permit shared with the file-tool pool (a program whose calls need that pool must not deadlock).
 */
const admission = new CpuAdmission(1);
const codePool = new WorkerTaskPool<CodeTasks>({ name: 'code-test', tasks: new URL('../src/runtime/tasks/code-mode.ts', import.meta.url), admission });
const filePool = new WorkerTaskPool<FileTasks>({ name: 'files-test', tasks: new URL('../src/runtime/tasks/file-edit.ts', import.meta.url), admission });
const dirs: string[] = [];
const programs: Programs = new Map();
const log = createLogger('code-test');

afterEach(() => {
  stopPrograms(programs);
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  await Promise.all([codePool.close(), filePool.close()]);
  expect(liveWorkerCount()).toBe(0);
});

const limits = { memoryBytes: 32 * 1024 * 1024, sliceMs: 1_000, maxOutputChars: 2_000, maxCalls: 50 };

function slice(code: string, extra: Partial<ProgramSliceInput> = {}): Promise<Awaited<ReturnType<typeof runProgram>>> {
  return codePool.run('runProgram', {
    input: {
      code,
      language: 'javascript',
      catalogue: [{ name: 'echo', description: 'echoes', parameters: {} }],
      calls: [],
      limits,
      clock: 1_700_000_000_000,
      seed: 7,
      ...extra,
    },
    inputBytes: code.length,
  });
}

describe('the sandbox (one slice on a worker)', { timeout: 60_000 }, () => {
  it.each([
    ['require', 'return typeof require'],
    ['process', 'return typeof process'],
    ['fetch', 'return typeof fetch'],
    ['setTimeout', 'return typeof setTimeout'],
    ['globalThis.__pincer_call', 'return typeof globalThis.__pincer_call'],
  ])('%s is undefined inside', async (_what, code) => {
    expect(await slice(code)).toEqual({ status: 'done', value: 'undefined', output: '' });
  });

  it('returns JSON, prints console output, and has a fixed clock', async () => {
    const done = await slice('console.log("hi", {a: 1}); return { now: Date.now(), year: new Date().getUTCFullYear() }');
    expect(done).toEqual({ status: 'done', value: '{"now":1700000000000,"year":2023}', output: 'hi {"a":1}\n' });
  });

  it('a loop that never ends is stopped at the limit; the worker is fine afterwards', async () => {
    const stuck = await slice('while (true) {}');
    expect(stuck).toMatchObject({ status: 'error', error: 'the program ran longer than its limit of 1000 ms of computing and was stopped' });
    expect(await slice('return 1 + 1')).toMatchObject({ status: 'done', value: '2' });
  });

  it('a program that allocates without end is stopped at its memory limit', async () => {
    const hungry = await slice('const a = []; for (;;) a.push(new ArrayBuffer(1 << 20))', { limits: { ...limits, sliceMs: 30_000 } });
    expect(hungry).toMatchObject({ status: 'error', error: 'the program used more than its memory limit of 32 MB and was stopped' });
  });

  it('endless recursion is a stack overflow, not a crash', async () => {
    expect(await slice('function f() { return f() + 1 }\nreturn f()')).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/^the program recursed too deeply/),
    });
  });

  it("a guest error comes back with its name, message and the program's line numbers", async () => {
    const failed = await slice('function parse() {\n  throw new RangeError("bad input");\n}\nparse();');
    expect(failed.status).toBe('error');
    expect(failed.status === 'error' && failed.error).toMatch(/^RangeError: bad input\n\s+at parse \(program\.js:2/);
  });

  it('a syntax error is named, TypeScript is stripped', async () => {
    expect(await slice('return (')).toMatchObject({ status: 'error', error: expect.stringMatching(/^SyntaxError/) });
    const ts = await slice('const n: number = 2; interface X { a: string }\nreturn (n as number) * 21', { language: 'typescript' });
    expect(ts).toEqual({ status: 'done', value: '42', output: '' });
  });

  it('console output is cut at the limit and says so', async () => {
    const noisy = await slice('for (let i = 0; i < 1000; i++) console.log("line " + i); return "ok"');
    expect(noisy.status).toBe('done');
    expect(noisy.output.length).toBeLessThan(2_200);
    expect(noisy.output).toContain('[console output cut at 2000 characters]');
  });

  it('parallel calls are asked for together, then replayed with their results in any order', async () => {
    const code = 'const [a, b] = await Promise.all([tools.echo({n: 1}), tools.echo({n: 2})]); const c = await tools.echo({n: a + b}); return c';
    const first = await slice(code);
    expect(first).toEqual({
      status: 'calls',
      calls: [
        { name: 'echo', args: '{"n":1}' },
        { name: 'echo', args: '{"n":2}' },
      ],
      output: '',
    });
    const second = await slice(code, {
      calls: [
        { name: 'echo', args: '{"n":2}', outcome: { ok: true, value: 'B' } },
        { name: 'echo', args: '{"n":1}', outcome: { ok: true, value: 'A' } },
      ],
    });
    expect(second).toEqual({ status: 'calls', calls: [{ name: 'echo', args: '{"n":"AB"}' }], output: '' });
    const third = await slice(code, {
      calls: [
        { name: 'echo', args: '{"n":1}', outcome: { ok: true, value: 'A' } },
        { name: 'echo', args: '{"n":2}', outcome: { ok: true, value: 'B' } },
        { name: 'echo', args: '{"n":"AB"}', outcome: { ok: false, error: 'no AB today' } },
      ],
    });
    expect(third).toMatchObject({ status: 'error', error: expect.stringContaining('Error: echo: no AB today') });
  });

  it('an unknown tool rejects inside the program; a promise that never settles is named', async () => {
    expect(await slice('try { await tools.call("nope", {}) } catch (e) { return e.message }')).toMatchObject({
      value: 'no tool "nope" (tools.search(query) finds tools)',
    });
    expect(await slice('await new Promise(() => {})')).toMatchObject({ status: 'error', error: expect.stringContaining('never settles') });
    expect(await slice('return [tools.search("ECHOES"), tools.describe("echo").name, "echo" in tools, typeof tools.nope]')).toMatchObject({
      value: '[[{"name":"echo","description":"echoes"}],"echo",true,"undefined"]',
    });
  });
});

function workspace(): { dir: string; tools: AgentTool[] } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-code-')));
  dirs.push(dir);
  const limitsOfTools = toolLimits({});
  const slow: AgentTool = {
    name: 'slow',
    label: 'slow',
    description: 'answers after a while',
    parameters: Type.Object({ ms: Type.Integer() }),
    execute: async (_id, params) => {
      await new Promise((resolve) => setTimeout(resolve, (params as { ms: number }).ms));
      return { content: [{ type: 'text', text: `slept ${(params as { ms: number }).ms}` }], details: {} };
    },
  };
  const tools = [...fileTools({ confinement: new Confinement(dir), limits: limitsOfTools, planner: poolPlanner(filePool), queue: new MutationQueue() }), slow];
  return { dir, tools };
}

const run = async (tool: AgentTool, args: Record<string, unknown>): Promise<string> => {
  const result = await tool.execute('t', args as never);
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
};

describe('exec and wait (the driver on this thread)', { timeout: 60_000 }, () => {
  it('a program edits and reads files through the real tools, with one CPU permit for both pools', async () => {
    const { dir, tools } = workspace();
    fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\n');
    fs.writeFileSync(path.join(dir, 'b.txt'), 'beta\n');
    const [exec] = codeModeTools({ tools, pool: codePool, limits: { ...codeModeLimits({}, 5_000), sliceMs: 2_000 }, log, programs });
    const answer = await run(exec!, {
      code: `
        await Promise.all([
          tools.edit({ path: 'a.txt', oldText: 'alpha', newText: 'ALPHA' }),
          tools.edit({ path: 'b.txt', oldText: 'beta', newText: 'BETA' }),
        ]);
        const [a, b] = await Promise.all([tools.read({ path: 'a.txt' }), tools.read({ path: 'b.txt' })]);
        console.log('read both');
        return a.split('\\n')[0].trim() + ' / ' + b.split('\\n')[0].trim();`,
    });
    expect(answer).toBe('1\tALPHA / 1\tBETA\n--- console ---\nread both');
    expect(fs.readFileSync(path.join(dir, 'a.txt'), 'utf8')).toBe('ALPHA\n');
    expect(programs.size).toBe(0);
  });

  it('a tool error and bad arguments reach the program as rejections; an uncaught one is the tool error', async () => {
    const { tools } = workspace();
    const [exec] = codeModeTools({ tools, pool: codePool, limits: codeModeLimits({}, 5_000), log, programs });
    const caught = await run(exec!, { code: 'try { await tools.read({ path: "missing.txt" }) } catch (e) { return "caught: " + e.message }' });
    expect(caught).toMatch(/^caught: read: ENOENT/);
    await expect(run(exec!, { code: 'await tools.slow({ ms: "soon" })' })).rejects.toThrow(/slow: Validation failed/);
  });

  it('a program still waiting after waitMs answers with a handle; wait resumes it', async () => {
    const { tools } = workspace();
    const [exec, wait] = codeModeTools({ tools, pool: codePool, limits: { ...codeModeLimits({}, 5_000), waitMs: 200 }, log, programs });
    const first = await run(exec!, { code: 'const s = await tools.slow({ ms: 1500 }); return "done: " + s' });
    expect(first).toMatch(/^the program is still running after \d+ s \(1 tool calls so far, waiting on slow\); call wait with \{"handle": "(p\d+)"\}/);
    const handle = /"handle": "(p\d+)"/.exec(first)![1]!;
    let answer = await run(wait!, { handle });
    while (answer.startsWith('the program is still running')) answer = await run(wait!, { handle });
    expect(answer).toBe('done: slept 1500');
    await expect(run(wait!, { handle })).rejects.toThrow(/no running program/);
  });
});
