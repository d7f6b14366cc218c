import type { AgentTool, AgentToolResult } from '@mariozechner/pi-agent-core';
import { Type, validateToolArguments } from '@mariozechner/pi-ai';
import { randomInt } from 'node:crypto';
import type { CatalogueEntry, CodeTasks, LoggedCall, ProgramLimits, ProgramSlice } from '../../../runtime/tasks/code-mode.js';
import type { WorkerTaskPool } from '../../../runtime/worker-pool/pool.js';
import { errorMessage, type Logger } from '../../../shared/log.js';
import { defineTool } from './define.js';
import { truncateMiddle } from './limits.js';
import { settingOrDefault } from '../../../shared/settings-load.js';

/**
 * Code mode (a group's `"codeMode": true`): the model sees two tools, `exec` and `wait`. `exec` runs the model's
 * program in the QuickJS sandbox on the code pool (src/runtime/tasks/code-mode.ts); the program reaches every other
 * tool of the run — file tools, bash, MCP servers, extension tools — as `await tools.<name>(args)`, and those calls run
 * here, through the same tool objects the model would otherwise get (same confinement, same MCP connections, same
 * output limits). A program's parallel calls run in parallel. The program runs slice by slice: each slice ends when it
 * awaits calls with no result yet, the calls run, and the next slice replays the program with their results. When a
 * program is still going after `waitMs`, `exec` answers with a handle and `wait {handle}` goes on waiting.
 */
export interface CodeModeLimits extends ProgramLimits {
  /** how long `exec` or `wait` waits for the program before answering with its handle */
  waitMs: number;
  /** how long a program may live in all (its tool calls included) before it is stopped */
  lifetimeMs: number;
  /** programs that may be running at once (with a handle) */
  maxPrograms: number;
}

export function codeModeLimits(env: Record<string, string | undefined>, maxOutputChars: number): CodeModeLimits {
  return {
    memoryBytes: settingOrDefault(env, 'PINCER_CODE_MEMORY_MB') * 1024 * 1024,
    sliceMs: settingOrDefault(env, 'PINCER_CODE_SLICE_MS'),
    maxOutputChars,
    maxCalls: 200,
    waitMs: settingOrDefault(env, 'PINCER_CODE_WAIT_MS'),
    lifetimeMs: 15 * 60_000,
    maxPrograms: 8,
  };
}

export interface CodeModeDeps {
  /** every tool of the run; the model sees none of them directly */
  tools: AgentTool[];
  pool: WorkerTaskPool<CodeTasks>;
  limits: CodeModeLimits;
  log: Logger;
  /** the programs still running (with handles), shared across turns of one conversation */
  programs: Programs;
}

export type Programs = Map<string, Program>;

interface Finished {
  ok: boolean;
  text: string;
}

/** One program: its call log, and the loop of slices and tool calls that drives it to an end. */
class Program {
  readonly calls: LoggedCall[] = [];
  readonly done: Promise<Finished>;
  readonly pending = new Set<string>();
  private readonly stop = new AbortController();
  private readonly started = Date.now();
  private readonly clock = Date.now();
  private readonly seed = randomInt(2 ** 31);

  constructor(
    readonly handle: string,
    private readonly code: string,
    private readonly language: 'javascript' | 'typescript',
    private readonly deps: CodeModeDeps,
    private readonly catalogue: CatalogueEntry[],
  ) {
    const lifetime = setTimeout(() => this.abort(`it ran longer than ${Math.round(deps.limits.lifetimeMs / 1000)} s in all`), deps.limits.lifetimeMs);
    lifetime.unref();
    this.done = this.drive().finally(() => clearTimeout(lifetime));
  }

  abort(why: string): void {
    if (!this.stop.signal.aborted) this.stop.abort(new Error(`the program was stopped: ${why}`));
  }

  private async drive(): Promise<Finished> {
    const { pool, limits } = this.deps;
    const signal = this.stop.signal;
    for (;;) {
      let slice: ProgramSlice;
      try {
        slice = await pool.run('runProgram', {
          input: { code: this.code, language: this.language, catalogue: this.catalogue, calls: this.calls, limits, clock: this.clock, seed: this.seed },
          inputBytes:
            this.code.length + this.calls.reduce((n, c) => n + c.args.length + (c.outcome?.ok ? c.outcome.value.length : (c.outcome?.error.length ?? 0)), 0),
          signal,
          // the slice's own CPU limit stops a busy program; this one stops a worker that is stuck beyond it
          timeoutMs: limits.sliceMs * 2 + 10_000,
        });
      } catch (err) {
        return { ok: false, text: signal.aborted ? errorMessage(signal.reason) : `the sandbox failed: ${errorMessage(err)}` };
      }
      if (slice.status === 'done') return { ok: true, text: answer(slice.value, slice.output) };
      if (slice.status === 'error') return { ok: false, text: answer(slice.error, slice.output) };
      await Promise.all(slice.calls.map((call) => this.run(call.name, call.args, signal)));
      if (signal.aborted) return { ok: false, text: errorMessage(signal.reason) };
    }
  }

  /** One of the program's tool calls, through the tool itself; its outcome goes into the log. */
  private async run(name: string, args: string, signal: AbortSignal): Promise<void> {
    const entry: LoggedCall = { name, args };
    this.calls.push(entry);
    const id = `${this.handle}-${this.calls.length}`;
    this.pending.add(id);
    const began = Date.now();
    try {
      const tool = this.deps.tools.find((t) => t.name === name);
      if (!tool) throw new Error(`no tool "${name}"`);
      const parsed: unknown = JSON.parse(args);
      const valid = validateToolArguments(tool, { type: 'toolCall', id, name, arguments: parsed as Record<string, unknown> }) as Record<string, unknown>;
      const result = await tool.execute(id, valid, signal);
      entry.outcome = { ok: true, value: truncateMiddle(resultText(result), this.deps.limits.maxOutputChars) };
      this.deps.log.info(`exec ${this.handle}: tool ${name} in ${Date.now() - began} ms`);
    } catch (err) {
      entry.outcome = { ok: false, error: errorMessage(err) };
      this.deps.log.info(`exec ${this.handle}: tool ${name} failed: ${errorMessage(err).split('\n')[0]}`);
    } finally {
      this.pending.delete(id);
    }
  }

  /** What is still running, for a handle answer. */
  describe(): string {
    const running = this.calls.filter((c) => !c.outcome).map((c) => c.name);
    const seconds = Math.round((Date.now() - this.started) / 1000);
    return (
      `the program is still running after ${seconds} s (${this.calls.length} tool calls so far` +
      (running.length ? `, waiting on ${running.join(', ')}` : '') +
      `); call wait with {"handle": "${this.handle}"} for its result`
    );
  }
}

function answer(main: string, output: string): string {
  return output.trim() ? `${main}\n--- console ---\n${output.trimEnd()}` : main || '(the program returned nothing)';
}

function resultText(result: AgentToolResult<unknown>): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join('\n');
}

let nextHandle = 1;

/** The two tools the model sees in code mode. */
export function codeModeTools(deps: CodeModeDeps): AgentTool[] {
  const catalogue: CatalogueEntry[] = deps.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    // TypeBox schemas carry symbol keys; the sandbox gets plain JSON Schema
    parameters: JSON.parse(JSON.stringify(tool.parameters ?? {})) as unknown,
  }));
  const names = catalogue.map((t) => t.name);

  const settle = async (program: Program, signal: AbortSignal | undefined, waitMs = deps.limits.waitMs): Promise<AgentToolResult<Record<string, never>>> => {
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), waitMs);
      onAbort = () => resolve('late');
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([program.done, late]);
      if (outcome === 'late') {
        if (signal?.aborted) {
          program.abort('the turn was stopped');
          deps.programs.delete(program.handle);
          throw new Error('the program was stopped with the turn');
        }
        return { content: [{ type: 'text', text: program.describe() }], details: {} };
      }
      deps.programs.delete(program.handle);
      if (!outcome.ok) throw new Error(outcome.text);
      return { content: [{ type: 'text', text: outcome.text }], details: {} };
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
    }
  };

  const exec = defineTool({
    name: 'exec',
    label: 'Run a program',
    description:
      'Run a short JavaScript or TypeScript program in a sandbox (no file system, network, timers, require, process or fetch). ' +
      `Every tool of this session is reachable from it: \`await tools.<name>(args)\` calls one (it resolves to the tool's text answer and rejects with its error; use tools.call(name, args) for names that are not identifiers), ` +
      "`tools.search(query)` lists tools whose name or description has the query's words, `tools.describe(name)` gives one tool's JSON-Schema parameters. " +
      'Calls run in parallel with Promise.all. Top-level await and return work; the answer is the returned value (JSON unless a string) and what console.log printed. ' +
      `Limits: ${Math.round(deps.limits.memoryBytes / 1048576)} MB memory, ${deps.limits.sliceMs} ms of computing between tool results, ${deps.limits.maxCalls} tool calls. ` +
      `A program still running after ${Math.round(deps.limits.waitMs / 1000)} s answers with a handle for wait. ` +
      `There are ${names.length} tools, among them: ${names.slice(0, 40).join(', ')}${names.length > 40 ? ', …' : ''}.`,
    parameters: Type.Object({
      code: Type.String({ description: 'the program' }),
      language: Type.Optional(Type.Union([Type.Literal('javascript'), Type.Literal('typescript')], { description: 'default javascript' })),
    }),
    execute: (_id, params, signal) => {
      if (deps.programs.size >= deps.limits.maxPrograms) {
        throw new Error(
          `${deps.programs.size} programs are still running (at most ${deps.limits.maxPrograms}); wait for one first: ${[...deps.programs.keys()].join(', ')}`,
        );
      }
      const handle = `p${nextHandle++}`;
      const program = new Program(handle, params.code, params.language ?? 'javascript', deps, catalogue);
      deps.programs.set(handle, program);
      return settle(program, signal);
    },
  });

  const wait = defineTool({
    name: 'wait',
    label: 'Wait for a program',
    description: 'Wait for a program that exec answered with a handle; answers with its result, or with the handle again if it is still running.',
    parameters: Type.Object({
      handle: Type.String({ description: 'the handle exec gave, e.g. p1' }),
      seconds: Type.Optional(
        Type.Integer({ minimum: 1, maximum: 600, description: `how long to wait at most (default ${Math.round(deps.limits.waitMs / 1000)})` }),
      ),
    }),
    execute: (_id, params, signal) => {
      const program = deps.programs.get(params.handle);
      if (!program) {
        const running = [...deps.programs.keys()];
        throw new Error(
          `no running program "${params.handle}"` + (running.length ? ` (running: ${running.join(', ')})` : ' (none is running; its result was already given)'),
        );
      }
      return settle(program, signal, params.seconds === undefined ? undefined : params.seconds * 1000);
    },
  });

  return [exec, wait];
}

/** Stop every program (the runtime closes). */
export function stopPrograms(programs: Programs): void {
  for (const program of programs.values()) program.abort('the runtime stopped');
  programs.clear();
}
