import {
  newQuickJSWASMModuleFromVariant,
  newVariant,
  type QuickJSContext,
  type QuickJSSyncVariant,
  type QuickJSHandle,
  type QuickJSWASMModule,
} from 'quickjs-emscripten-core';
import { transform } from 'sucrase';
import { GUEST_PRELUDE } from './code-prelude.js';

/**
 * Code mode's sandbox (the worker side of the built-in runtime's `exec`): the model's program runs in QuickJS compiled
 * to WebAssembly, on a worker of the code pool, with a memory limit, a CPU-time limit per slice and an output limit.
 * The guest has no file system, network, timers or host objects — only `console`, and `tools`, whose calls are recorded
 * here and executed by the caller through the normal tool path (src/providers/pincer/tools/code-mode.ts).
 *
 * A slice never waits for a tool: when the program awaits calls whose results are not known yet, the slice ends with
 * those calls and the worker (and its CPU permit) is free again, so nested tool work that needs the pool can run
 * even with one worker. The next slice runs the program again from the start with every result known so far — the
 * checkpoint is the call log, replayed: a call is matched to its recorded result by name, arguments and occurrence,
 * so a different interleaving of parallel calls still replays. `Date` and `Math.random` are fixed per program, so a
 * replay sees what the first run saw.
 */
export interface CatalogueEntry {
  name: string;
  description: string;
  /** the tool's parameters as JSON Schema */
  parameters: unknown;
}

/** A tool call the program made, and (once known) its outcome. */
export interface LoggedCall {
  name: string;
  /** the arguments as JSON text (the key the replay matches by) */
  args: string;
  outcome?: { ok: true; value: string } | { ok: false; error: string };
}

export interface ProgramLimits {
  /** QuickJS heap limit in bytes */
  memoryBytes: number;
  /** CPU time one slice may take before the program is stopped */
  sliceMs: number;
  /** characters of console output kept */
  maxOutputChars: number;
  /** tool calls one program may make in all */
  maxCalls: number;
}

export interface ProgramSliceInput {
  code: string;
  language: 'javascript' | 'typescript';
  catalogue: CatalogueEntry[];
  /** every call of earlier slices, in the order they were made, each with its outcome */
  calls: LoggedCall[];
  limits: ProgramLimits;
  /** what `Date.now()` says inside the program (fixed for the program's life) */
  clock: number;
  /** what `Math.random` inside the program starts from */
  seed: number;
}

export type ProgramSlice =
  /** the program finished; `value` is its return value as text (JSON unless it was a string) */
  | { status: 'done'; value: string; output: string }
  /** the program awaits these new calls; run them and slice again with their outcomes appended */
  | { status: 'calls'; calls: { name: string; args: string }[]; output: string }
  /** the program failed (a guest error with its stack, a limit, a syntax error); `error` is the whole message */
  | { status: 'error'; error: string; output: string };

export type CodeTasks = {
  runProgram: { input: ProgramSliceInput; output: ProgramSlice };
};

let quickjs: Promise<QuickJSWASMModule> | undefined;

/** Room in the WebAssembly heap beyond a program's own limit, for QuickJS's runtime itself. */
const HEAP_HEADROOM_BYTES = 64 * 1024 * 1024;
const WASM_PAGE_BYTES = 65_536;

/**
 * QuickJS in a WebAssembly heap that cannot grow past the program's limit plus headroom. QuickJS's own memory limit
 * does not count ArrayBuffer contents: without this cap a program filling ArrayBuffers grows the heap towards 4 GiB
 * (9 s and over 2 GiB of the runner's memory here, so a sandbox's memory limit killed the whole runner) before QuickJS
 * says "out of memory"; with it the program stops in well under a second. The limit is the runner's (one setting), so
 * the first program's sizes the heap.
 */
async function loadQuickJS(memoryBytes: number): Promise<QuickJSWASMModule> {
  // the variant's own loader finds its .wasm file beside it
  const loaded = (await import('@jitl/quickjs-wasmfile-release-sync')) as unknown as { default?: QuickJSSyncVariant } & Partial<QuickJSSyncVariant>;
  const base = (loaded.default?.type ? loaded.default : loaded) as QuickJSSyncVariant;
  const maximum = Math.ceil((memoryBytes + HEAP_HEADROOM_BYTES) / WASM_PAGE_BYTES);
  const { Memory } = (globalThis as unknown as { WebAssembly: { Memory: new (size: { initial: number; maximum: number }) => unknown } }).WebAssembly;
  const wasmMemory = new Memory({ initial: Math.min(maximum, Math.ceil((16 * 1024 * 1024) / WASM_PAGE_BYTES)), maximum });
  return newQuickJSWASMModuleFromVariant(newVariant(base, { wasmMemory } as Parameters<typeof newVariant>[1]));
}

export async function runProgram(input: ProgramSliceInput): Promise<ProgramSlice> {
  let source: string;
  try {
    source = compile(input.code, input.language);
  } catch (err) {
    return { status: 'error', error: `the program does not compile: ${err instanceof Error ? err.message : String(err)}`, output: '' };
  }
  quickjs ??= loadQuickJS(input.limits.memoryBytes);
  const module = await quickjs;
  const runtime = module.newRuntime();
  runtime.setMemoryLimit(input.limits.memoryBytes);
  runtime.setMaxStackSize(1024 * 1024);
  const deadline = performance.now() + input.limits.sliceMs;
  let interrupted = false;
  runtime.setInterruptHandler(() => (interrupted = performance.now() > deadline));
  const context = runtime.newContext();
  const guest = new Guest(context, input);
  try {
    return guest.run(source, () => interrupted);
  } finally {
    // A program stopped by a limit may leave QuickJS objects behind; the runtime goes away with them.
    try {
      context.dispose();
      runtime.dispose();
    } catch {
      // nothing to keep: the worker's memory is reused by the next slice's new runtime
    }
  }
}

/** The program wrapped so that top-level `await` and `return` work and its line numbers stay as written. */
function compile(code: string, language: ProgramSliceInput['language']): string {
  const wrapped = `__pincer_finish((async () => {${code}\n})());`;
  if (language === 'javascript') return wrapped;
  // Types stripped only: sucrase keeps line numbers, so guest stacks point at the program's own lines.
  return transform(wrapped, { transforms: ['typescript'], disableESTransforms: true }).code;
}

class Guest {
  private output = '';
  private outputCut = false;
  private readonly known = new Map<string, LoggedCall[]>();
  private readonly seen = new Map<string, number>();
  private readonly fresh: { name: string; args: string }[] = [];
  private settled: { ok: boolean; text: string } | undefined;
  private tooMany = false;

  constructor(
    private readonly context: QuickJSContext,
    private readonly input: ProgramSliceInput,
  ) {
    for (const call of input.calls) {
      const key = `${call.name}\0${call.args}`;
      const list = this.known.get(key) ?? [];
      list.push(call);
      this.known.set(key, list);
    }
  }

  run(source: string, interrupted: () => boolean): ProgramSlice {
    const { context } = this;
    const global = context.global;
    const bind = (name: string, fn: (...args: QuickJSHandle[]) => QuickJSHandle | undefined): void => {
      const handle = context.newFunction(name, fn);
      context.setProp(global, name, handle);
      handle.dispose();
    };
    bind('__pincer_print', (text) => {
      this.print(context.getString(text));
      return undefined;
    });
    bind('__pincer_call', (name, args) => this.call(context.getString(name), context.getString(args)));
    bind('__pincer_settle', (ok, text) => {
      this.settled = { ok: context.dump(ok) === true, text: context.getString(text) };
      return undefined;
    });
    context.setProp(global, '__pincer_catalogue', context.newString(JSON.stringify(this.input.catalogue)));
    const prelude = GUEST_PRELUDE.replace('__CLOCK__', String(this.input.clock)).replace('__SEED__', String(this.input.seed >>> 0));
    const failure = this.evaluate(prelude, 'prelude.js') ?? this.evaluate(source, 'program.js');
    if (failure) return this.stopped(failure, interrupted());
    // Run the program's promise jobs until it settles or waits on calls that have no outcome yet.
    const jobs = context.runtime.executePendingJobs();
    if (jobs.error) {
      const message = this.describe(jobs.error);
      jobs.error.dispose();
      return this.stopped(message, interrupted());
    }
    if (interrupted()) return this.stopped('interrupted', true);
    const output = this.outputText();
    if (this.tooMany) {
      return { status: 'error', error: `the program made more than ${this.input.limits.maxCalls} tool calls and was stopped`, output };
    }
    if (this.settled) {
      // a limit hit inside the async program arrives as its rejection
      return this.settled.ok ? { status: 'done', value: this.settled.text, output } : this.stopped(this.settled.text, false);
    }
    if (this.fresh.length > 0) return { status: 'calls', calls: this.fresh, output };
    const pending = this.input.calls.length > 0 && this.input.calls.some((c) => !c.outcome);
    return {
      status: 'error',
      error: pending
        ? 'the program waits on tool calls whose results never came'
        : 'the program waits on a promise that never settles (there are no timers in the sandbox; await tool calls or return a value)',
      output,
    };
  }

  /** A recorded outcome (as JSON text for the guest), undefined while the call is pending. */
  private call(name: string, args: string): QuickJSHandle {
    const key = `${name}\0${args}`;
    const index = this.seen.get(key) ?? 0;
    this.seen.set(key, index + 1);
    const logged = this.known.get(key)?.[index];
    if (logged?.outcome) return this.context.newString(JSON.stringify(logged.outcome));
    if (!logged) {
      if (this.input.calls.length + this.fresh.length >= this.input.limits.maxCalls) {
        this.tooMany = true;
        return this.context.newString(JSON.stringify({ ok: false, error: `more than ${this.input.limits.maxCalls} tool calls` }));
      }
      this.fresh.push({ name, args });
    }
    return this.context.undefined;
  }

  private evaluate(code: string, filename: string): string | undefined {
    const result = this.context.evalCode(code, filename);
    if (result.error) {
      const message = this.describe(result.error);
      result.error.dispose();
      return message;
    }
    result.value.dispose();
    return undefined;
  }

  private stopped(message: string, interrupted: boolean): ProgramSlice {
    const output = this.outputText();
    if (interrupted)
      return { status: 'error', error: `the program ran longer than its limit of ${this.input.limits.sliceMs} ms of computing and was stopped`, output };
    if (/^InternalError: out of memory/.test(message) || message === 'out of memory') {
      return {
        status: 'error',
        error: `the program used more than its memory limit of ${Math.round(this.input.limits.memoryBytes / 1048576)} MB and was stopped`,
        output,
      };
    }
    if (/^InternalError: stack overflow/.test(message))
      return { status: 'error', error: `the program recursed too deeply (stack overflow)\n${message}`, output };
    return { status: 'error', error: message, output };
  }

  /** A guest error as `Name: message` and its stack (with program.js line numbers). */
  private describe(error: QuickJSHandle): string {
    const dumped: unknown = this.context.dump(error);
    if (dumped && typeof dumped === 'object') {
      const { name, message, stack } = dumped as { name?: unknown; message?: unknown; stack?: unknown };
      const head = `${typeof name === 'string' ? name : 'Error'}: ${typeof message === 'string' ? message : ''}`;
      return typeof stack === 'string' && stack.trim() ? `${head}\n${stack.trimEnd()}` : head;
    }
    return `uncaught: ${String(dumped)}`;
  }

  private print(text: string): void {
    if (this.outputCut) return;
    const room = this.input.limits.maxOutputChars - this.output.length;
    if (text.length + 1 > room) {
      this.output += text.slice(0, Math.max(0, room));
      this.outputCut = true;
      return;
    }
    this.output += `${text}\n`;
  }

  private outputText(): string {
    return this.outputCut ? `${this.output}\n… [console output cut at ${this.input.limits.maxOutputChars} characters]` : this.output;
  }
}
