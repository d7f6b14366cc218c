import type { AgentTool, AgentToolResult } from '@mariozechner/pi-agent-core';
import { Type } from '@mariozechner/pi-ai';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { EditPlan, EditPlanInput, FileTasks, Replacement, WritePlanInput } from '../../../runtime/tasks/file-edit.js';
import type { Receipts } from '../../../runtime/tasks/edit-receipt.js';
import type { WorkerTaskPool } from '../../../runtime/worker-pool/pool.js';
import type { Confinement } from './confine.js';
import { defineTool } from './define.js';
import type { ToolLimits } from './limits.js';

/**
 * The built-in runtime's `write` and `edit`. Matching, normalisation and the diff are planned on a worker
 * (src/runtime/tasks/file-edit.ts); this side keeps what must stay on the caller: one mutation queue per file, all
 * file-system access, the confinement check, and after planning — before writing — a re-check of cancellation,
 * confinement (a link swapped in meanwhile) and the file's content (changed meanwhile: planned again once, then a
 * clear error, never a lost write). What was written is read back and compared.
 */
export interface FilePlanner {
  planEdit(input: EditPlanInput, signal?: AbortSignal): Promise<EditPlan>;
  planWrite(input: WritePlanInput, signal?: AbortSignal): Promise<Receipts>;
}

export function poolPlanner(pool: WorkerTaskPool<FileTasks>): FilePlanner {
  return {
    planEdit: (input, signal) =>
      pool.run('planEdit', { input, inputBytes: input.before.length + input.edits.reduce((n, e) => n + e.oldText.length + e.newText.length, 0), signal }),
    planWrite: (input, signal) => pool.run('planWrite', { input, inputBytes: (input.before?.length ?? 0) + input.after.length, signal }),
  };
}

/** One queue per file (by resolved path): edits and writes of the same file run one after another, others in parallel. */
export class MutationQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(work, work);
    const tail = next.catch(() => undefined); // the edit's own result reports its failure; the queue goes on
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}

/** What the transcript keeps of an edit or overwrite (the tool result's `details`). */
export interface FileReceiptDetails {
  path: string;
  display: string;
  unified?: string;
  summarised?: string;
}

export interface FileToolDeps {
  confinement: Confinement;
  limits: ToolLimits;
  planner: FilePlanner;
  queue: MutationQueue;
}

const PLAN_ATTEMPTS = 2;

export function writeTool({ confinement, limits, planner, queue }: FileToolDeps): AgentTool {
  return defineTool({
    name: 'write',
    label: 'Write file',
    description:
      'Create or overwrite a file in the agent folder with the given content (folders are created). An overwrite answers with a diff of what changed.',
    parameters: Type.Object({
      path: Type.String({ description: 'file path, relative to the agent folder' }),
      content: Type.String({ description: 'the complete new content' }),
    }),
    execute: async (_id, params, signal) => {
      const file = confinement.resolve(params.path);
      const shown = confinement.display(file);
      const bytes = Buffer.byteLength(params.content);
      if (bytes > limits.maxWriteBytes) throw new Error(`content is ${bytes} bytes; at most ${limits.maxWriteBytes} per write`);
      return queue.run(file, async () => {
        await fs.mkdir(path.dirname(file), { recursive: true });
        const target = { file, shown, requested: params.path };
        const receipts = await planThenWrite(target, 'write', { confinement, limits }, signal, async (before) => ({
          after: params.content,
          answer: before === null ? undefined : await planner.planWrite({ path: shown, before, after: params.content }, signal),
        }));
        if (!receipts) return result(`wrote ${bytes} bytes to ${shown} (new file)`, undefined);
        return result(`wrote ${bytes} bytes to ${shown}\n${receipts.display}`, { path: shown, ...receiptsOf(receipts) });
      });
    },
  });
}

export function editTool({ confinement, limits, planner, queue }: FileToolDeps): AgentTool {
  return defineTool({
    name: 'edit',
    label: 'Edit file',
    description:
      'Replace text in a file of the agent folder: oldText with newText, or several replacements at once in `edits` (all applied or none). ' +
      'Each oldText must match exactly once; a match that differs only in quotes, Unicode spaces, trailing whitespace or line endings is accepted and reported. Answers with the changed lines.',
    parameters: Type.Object({
      path: Type.String({ description: 'file path, relative to the agent folder' }),
      oldText: Type.Optional(Type.String({ description: 'the text to replace (must occur exactly once)' })),
      newText: Type.Optional(Type.String({ description: 'the replacement text' })),
      edits: Type.Optional(
        Type.Array(Type.Object({ oldText: Type.String(), newText: Type.String() }), { description: 'several replacements in this file, applied all or none' }),
      ),
    }),
    execute: async (_id, params, signal) => {
      const edits = replacementsOf(params);
      const file = confinement.resolve(params.path);
      const shown = confinement.display(file);
      return queue.run(file, async () => {
        const target = { file, shown, requested: params.path };
        const plan = await planThenWrite(target, 'edit', { confinement, limits }, signal, async (before) => {
          if (before === null) throw new Error(`${shown} does not exist (use write to create it)`);
          const planned = await planner.planEdit({ path: shown, before, edits, maxBytes: limits.maxWriteBytes }, signal);
          if (!planned.ok) throw new Error(planned.error);
          return { after: planned.after, answer: planned };
        });
        const where = plan.replacements
          .map((r) => `line ${r.line}` + (r.kind === 'normalised' ? ` (matched after normalising ${r.normalisations.join(', ') || 'whitespace'})` : ''))
          .join(', ');
        return result(`edited ${shown} at ${where}\n${plan.display}`, { path: shown, ...receiptsOf(plan) });
      });
    },
  });
}

function replacementsOf(params: { oldText?: string; newText?: string; edits?: Replacement[] }): Replacement[] {
  if (params.edits !== undefined) {
    if (params.oldText !== undefined || params.newText !== undefined) throw new Error('give either oldText/newText or edits, not both');
    if (params.edits.length === 0) throw new Error('edits is empty');
    return params.edits;
  }
  if (params.oldText === undefined || params.newText === undefined) throw new Error('give oldText and newText (or edits)');
  return [{ oldText: params.oldText, newText: params.newText }];
}

/**
 * Plans a change from what the file holds now and writes it only if the file did not change while it was planned
 * (planned again once, then a clear error: never a lost write); what was written is read back and compared.
 */
async function planThenWrite<T>(
  target: { file: string; shown: string; requested: string },
  what: 'write' | 'edit',
  { confinement, limits }: Pick<FileToolDeps, 'confinement' | 'limits'>,
  signal: AbortSignal | undefined,
  plan: (before: string | null) => Promise<{ after: string; answer: T }>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const before = await readIfExists(target.file, limits);
    const planned = await plan(before);
    recheck(signal, confinement, target.requested);
    if ((await readIfExists(target.file, limits)) !== before) {
      if (attempt < PLAN_ATTEMPTS) continue;
      throw new Error(`${target.shown} changed while the ${what} was planned, twice; nothing was written: read it again and retry`);
    }
    await fs.writeFile(target.file, planned.after);
    await verifyPersisted(target.file, planned.after, target.shown);
    return planned.answer;
  }
}

function receiptsOf(receipts: Receipts): Omit<FileReceiptDetails, 'path'> {
  return { display: receipts.display, unified: receipts.unified, summarised: receipts.summarised };
}

/** After planning, before writing: the call may have been cancelled, or a link swapped in. */
function recheck(signal: AbortSignal | undefined, confinement: Confinement, requested: string): void {
  if (signal?.aborted) throw new Error('cancelled after planning; nothing was written');
  confinement.resolve(requested);
}

async function readIfExists(file: string, limits: ToolLimits): Promise<string | null> {
  let stat;
  try {
    stat = await fs.stat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  if (stat.isDirectory()) throw new Error(`${file} is a folder`);
  if (stat.size > limits.maxWriteBytes)
    throw new Error(`${path.basename(file)} is ${stat.size} bytes; files over ${limits.maxWriteBytes} bytes are not edited`);
  return fs.readFile(file, 'utf8');
}

async function verifyPersisted(file: string, expected: string, shown: string): Promise<void> {
  const back = await fs.readFile(file);
  if (!back.equals(Buffer.from(expected)))
    throw new Error(`${shown}: what was read back (${back.length} bytes) differs from what was written; check the disk and the file`);
}

function result(textValue: string, details: FileReceiptDetails | undefined): AgentToolResult<FileReceiptDetails | Record<string, never>> {
  return { content: [{ type: 'text', text: textValue }], details: details ?? {} };
}
