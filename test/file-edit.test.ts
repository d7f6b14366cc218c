import type { AgentTool } from '@mariozechner/pi-agent-core';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { Confinement } from '../src/providers/pincer/tools/confine.js';
import { MutationQueue, poolPlanner, type FilePlanner, type FileReceiptDetails } from '../src/providers/pincer/tools/edit.js';
import { fileTools } from '../src/providers/pincer/tools/files.js';
import { toolLimits } from '../src/providers/pincer/tools/limits.js';
import type { FileTasks } from '../src/runtime/tasks/file-edit.js';
import { CpuAdmission, WorkerTaskPool, liveWorkerCount } from '../src/runtime/worker-pool/index.js';

/**
 * The built-in runtime's `edit` and `write` with their planning on real worker threads: matching (exact, then after
 * normalisation), ambiguity, the all-or-none multi-edit, the receipts and their limits, and what the caller re-checks
 * between planning and writing (a file changed meanwhile, a cancellation, a link swapped in). Every unified receipt
 * is applied with `patch` to the old file and must reproduce the new one.
 */
const pool = new WorkerTaskPool<FileTasks>({
  name: 'files-test',
  tasks: new URL('../src/runtime/tasks/file-edit.ts', import.meta.url),
  admission: new CpuAdmission(1),
});
const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  await pool.close();
  expect(liveWorkerCount()).toBe(0);
});

interface Setup {
  dir: string;
  tools: Record<string, AgentTool>;
}

function setup(planner: FilePlanner = poolPlanner(pool), env: Record<string, string> = {}): Setup {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-edit-')));
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, 'agent'));
  const confinement = new Confinement(path.join(dir, 'agent'));
  const tools = fileTools({ confinement, limits: toolLimits(env), planner, queue: new MutationQueue() });
  return { dir, tools: Object.fromEntries(tools.map((t) => [t.name, t])) };
}

async function call(tool: AgentTool, args: Record<string, unknown>, signal?: AbortSignal): Promise<{ text: string; details: FileReceiptDetails }> {
  const result = await tool.execute('call-1', args as never, signal);
  return { text: result.content.map((c) => (c.type === 'text' ? c.text : '')).join(''), details: result.details as FileReceiptDetails };
}

async function failure(tool: AgentTool, args: Record<string, unknown>, signal?: AbortSignal): Promise<string> {
  return tool.execute('call-1', args as never, signal).then(
    () => {
      throw new Error('expected the tool to fail');
    },
    (err: Error) => err.message,
  );
}

/** `patch -p1` the receipt onto a copy of the old file: it must give exactly the new one. */
function applyWithPatch(dir: string, name: string, before: string, unified: string): string {
  const work = fs.mkdtempSync(path.join(dir, 'patch-'));
  fs.mkdirSync(path.dirname(path.join(work, name)), { recursive: true });
  fs.writeFileSync(path.join(work, name), before);
  const run = spawnSync('patch', ['-p1', '--batch', '--silent'], { cwd: work, input: unified, encoding: 'utf8' });
  expect(run.stderr + run.stdout).toBe('');
  expect(run.status).toBe(0);
  return fs.readFileSync(path.join(work, name), 'utf8');
}

const lines = (n: number, prefix = 'line'): string => Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}\n`).join('');

interface EditCase {
  name: string;
  before: string;
  args: Record<string, unknown>;
  /** the file afterwards (unchanged on failure) */
  after?: string;
  /** the tool's answer matches */
  says: RegExp;
  fails?: boolean;
  /** the unified receipt is summarised (missing), and says so */
  summarised?: RegExp;
}

const cases: EditCase[] = [
  {
    name: 'exact match',
    before: 'alpha\nbeta\ngamma\n',
    args: { oldText: 'beta', newText: 'BETA' },
    after: 'alpha\nBETA\ngamma\n',
    says: /^edited notes\.txt at line 2\n/,
  },
  {
    name: 'exact multi-line match',
    before: 'a\nb\nc\nd\n',
    args: { oldText: 'b\nc\n', newText: 'x\n' },
    after: 'a\nx\nd\n',
    says: /at line 2\n.*\+1 −2 lines/,
  },
  { name: 'deleting text', before: 'keep\ndrop me\nkeep\n', args: { oldText: 'drop me\n', newText: '' }, after: 'keep\nkeep\n', says: /line 2/ },
  {
    name: 'curly quotes in the file, straight in oldText',
    before: 'say \u201chello\u201d and \u2018bye\u2019\n',
    args: { oldText: 'say "hello" and \'bye\'', newText: 'say "hi"' },
    after: 'say "hi"\n',
    says: /normalising curly vs straight quotes/,
  },
  {
    name: 'straight quotes in the file, curly in oldText',
    before: 'x = "v"\n',
    args: { oldText: 'x = \u201cv\u201d', newText: 'x = "w"' },
    after: 'x = "w"\n',
    says: /curly vs straight quotes/,
  },
  {
    name: 'a non-breaking space in the file',
    before: 'price:\u00a010 EUR\n',
    args: { oldText: 'price: 10 EUR', newText: 'price: 12 EUR' },
    after: 'price: 12 EUR\n',
    says: /non-breaking or other Unicode spaces/,
  },
  {
    name: 'trailing whitespace in the file',
    before: 'one   \ntwo\t\nthree\n',
    args: { oldText: 'one\ntwo\n', newText: 'ONE\nTWO\n' },
    after: 'ONE\nTWO\nthree\n',
    says: /trailing whitespace/,
  },
  {
    name: 'CRLF file, LF oldText (CRLF kept)',
    before: 'first\r\nsecond\r\nthird\r\n',
    args: { oldText: 'first\nsecond\n', newText: 'uno\ndos\n' },
    after: 'uno\r\ndos\r\nthird\r\n',
    says: /line endings \(CRLF vs LF\)/,
  },
  {
    name: 'decomposed é in the file, composed in oldText',
    before: 'caf\u0065\u0301 au lait\n',
    args: { oldText: 'caf\u00e9', newText: 'tea' },
    after: 'tea au lait\n',
    says: /Unicode normal form \(NFC\)/,
  },
  {
    name: 'several exact matches refused with their lines',
    before: 'x\ny\nx\nz\nx\n',
    args: { oldText: 'x', newText: 'q' },
    says: /occurs 3 times in notes\.txt \(lines 1, 3, 5\)/,
    fails: true,
  },
  {
    name: 'several normalised matches refused',
    before: 'a \u201cq\u201d\nb\na "q"  \n',
    args: { oldText: 'a \u2018q\u2019', newText: 'z' },
    says: /occurs|not found/,
    fails: true,
  },
  { name: 'not found', before: 'nothing here\n', args: { oldText: 'something', newText: 'x' }, says: /oldText not found in notes\.txt/, fails: true },
  { name: 'empty oldText', before: 'x\n', args: { oldText: '', newText: 'y' }, says: /oldText is empty/, fails: true },
  {
    name: 'multi-edit applied together',
    before: 'a=1\nb=2\nc=3\n',
    args: {
      edits: [
        { oldText: 'a=1', newText: 'a=10' },
        { oldText: 'c=3', newText: 'c=30' },
      ],
    },
    after: 'a=10\nb=2\nc=30\n',
    says: /at line 1, line 3/,
  },
  {
    name: 'multi-edit with one missing: nothing applied',
    before: 'a=1\nb=2\n',
    args: {
      edits: [
        { oldText: 'a=1', newText: 'a=10' },
        { oldText: 'zzz', newText: 'y' },
      ],
    },
    says: /edit 2: oldText not found/,
    fails: true,
  },
  {
    name: 'multi-edit with overlapping edits refused',
    before: 'abcdef\n',
    args: {
      edits: [
        { oldText: 'abcd', newText: 'x' },
        { oldText: 'cdef', newText: 'y' },
      ],
    },
    says: /edits 1 and 2 overlap/,
    fails: true,
  },
  {
    name: 'both forms at once refused',
    before: 'x\n',
    args: { oldText: 'x', newText: 'y', edits: [{ oldText: 'x', newText: 'z' }] },
    says: /either oldText\/newText or edits/,
    fails: true,
  },
  {
    name: 'a preview of at most 12 changed lines',
    before: lines(30),
    args: { oldText: lines(10), newText: lines(10, 'LINE') },
    after: lines(10, 'LINE') + lines(30).slice(lines(10).length),
    says: /… 8 more changed lines/,
  },
  {
    name: 'a near-total rewrite is summarised, and says so',
    before: lines(50),
    args: { oldText: lines(50), newText: lines(50, 'new') },
    after: lines(50, 'new'),
    says: /near-total rewrite \(50 of 50 lines replaced\)/,
    summarised: /near-total rewrite/,
  },
  {
    name: 'a diff over the size limit is summarised',
    before: lines(30),
    args: { oldText: 'line 5\n', newText: `${'x'.repeat(70_000)}\n` },
    says: /unified diff is \d+ characters \(limit 64000\): summarised/,
    summarised: /limit 64000/,
  },
  {
    name: 'an edit past the byte limit refused',
    before: 'small\n',
    args: { oldText: 'small', newText: 'y'.repeat(5 * 1024 * 1024 + 1) },
    says: /would exceed 5242880 bytes/,
    fails: true,
  },
];

describe('edit: planning on a worker, writing on the caller', () => {
  it.each(cases)('$name', async ({ before, args, after, says, fails, summarised }) => {
    const { dir, tools } = setup();
    const file = path.join(dir, 'agent', 'notes.txt');
    fs.writeFileSync(file, before);
    if (fails) {
      expect(await failure(tools.edit!, { path: 'notes.txt', ...args })).toMatch(says);
      expect(fs.readFileSync(file, 'utf8')).toBe(before);
      return;
    }
    const { text, details } = await call(tools.edit!, { path: 'notes.txt', ...args });
    expect(text).toMatch(says);
    if (after !== undefined) expect(fs.readFileSync(file, 'utf8')).toBe(after);
    const written = fs.readFileSync(file, 'utf8');
    expect(details.display).toMatch(/^notes\.txt: \+\d+ −\d+ lines/);
    if (summarised) {
      expect(details.unified).toBeUndefined();
      expect(details.summarised).toMatch(summarised);
    } else {
      expect(applyWithPatch(dir, 'notes.txt', before, details.unified!)).toBe(written);
    }
  });

  it('shows changed lines with their line numbers in the display receipt', async () => {
    const { dir, tools } = setup();
    fs.writeFileSync(path.join(dir, 'agent', 'a.txt'), 'one\ntwo\nthree\n');
    const { details } = await call(tools.edit!, { path: 'a.txt', oldText: 'two', newText: 'TWO' });
    expect(details.display).toBe('a.txt: +1 −1 lines\n    2 - two\n    2 + TWO');
    expect(details.unified).toMatch(/^--- a\/a\.txt\n\+\+\+ b\/a\.txt\n@@ -1,3 \+1,3 @@/m);
  });

  it('plans again when the file changed between planning and writing, and keeps the other write', async () => {
    let changes = 1;
    const real = poolPlanner(pool);
    let file = '';
    const planner: FilePlanner = {
      ...real,
      planEdit: async (input, signal) => {
        const plan = await real.planEdit(input, signal);
        if (changes-- > 0) fs.appendFileSync(file, 'zzz\n');
        return plan;
      },
    };
    const { dir, tools } = setup(planner);
    file = path.join(dir, 'agent', 'notes.txt');
    fs.writeFileSync(file, 'a\nb\n');
    await call(tools.edit!, { path: 'notes.txt', oldText: 'a', newText: 'A' });
    expect(fs.readFileSync(file, 'utf8')).toBe('A\nb\nzzz\n');
  });

  it('refuses with a clear error when the file keeps changing, writing nothing', async () => {
    const real = poolPlanner(pool);
    let file = '';
    let n = 0;
    const planner: FilePlanner = {
      ...real,
      planEdit: async (input, signal) => {
        const plan = await real.planEdit(input, signal);
        fs.appendFileSync(file, `zzz ${++n}\n`);
        return plan;
      },
    };
    const { dir, tools } = setup(planner);
    file = path.join(dir, 'agent', 'notes.txt');
    fs.writeFileSync(file, 'a\n');
    expect(await failure(tools.edit!, { path: 'notes.txt', oldText: 'a', newText: 'A' })).toBe(
      'notes.txt changed while the edit was planned, twice; nothing was written: read it again and retry',
    );
    expect(fs.readFileSync(file, 'utf8')).toBe('a\nzzz 1\nzzz 2\n');
  });

  it('writes nothing when the call is cancelled between planning and writing', async () => {
    const controller = new AbortController();
    const real = poolPlanner(pool);
    const planner: FilePlanner = {
      ...real,
      planEdit: async (input, signal) => {
        const plan = await real.planEdit(input, signal);
        controller.abort();
        return plan;
      },
    };
    const { dir, tools } = setup(planner);
    const file = path.join(dir, 'agent', 'notes.txt');
    fs.writeFileSync(file, 'a\n');
    expect(await failure(tools.edit!, { path: 'notes.txt', oldText: 'a', newText: 'A' }, controller.signal)).toBe(
      'cancelled after planning; nothing was written',
    );
    expect(fs.readFileSync(file, 'utf8')).toBe('a\n');
  });

  it('writes nothing when a link leading out is swapped in after planning', async () => {
    const real = poolPlanner(pool);
    let swap = (): void => undefined;
    const planner: FilePlanner = {
      ...real,
      planEdit: async (input, signal) => {
        const plan = await real.planEdit(input, signal);
        swap();
        return plan;
      },
    };
    const { dir, tools } = setup(planner);
    const file = path.join(dir, 'agent', 'notes.txt');
    const outside = path.join(dir, 'secret.txt');
    fs.writeFileSync(file, 'a\n');
    fs.writeFileSync(outside, 'a\n');
    swap = () => {
      fs.rmSync(file);
      fs.symlinkSync(outside, file);
    };
    expect(await failure(tools.edit!, { path: 'notes.txt', oldText: 'a', newText: 'A' })).toMatch(/notes\.txt is outside the agent folder/);
    expect(fs.readFileSync(outside, 'utf8')).toBe('a\n');
  });

  it('runs edits of one file one after another: 20 parallel edits all land', async () => {
    const { dir, tools } = setup();
    const file = path.join(dir, 'agent', 'many.txt');
    fs.writeFileSync(file, lines(20, 'item'));
    await Promise.all(Array.from({ length: 20 }, (_, i) => call(tools.edit!, { path: 'many.txt', oldText: `item ${i + 1}\n`, newText: `done ${i + 1}\n` })));
    expect(fs.readFileSync(file, 'utf8')).toBe(lines(20, 'done'));
  });
});

describe('write: receipts for overwrites', () => {
  it('a new file gets a short receipt, an overwrite a diff that patch applies', async () => {
    const { dir, tools } = setup();
    const created = await call(tools.write!, { path: 'sub/new.txt', content: 'one\ntwo\n' });
    expect(created.text).toBe('wrote 8 bytes to sub/new.txt (new file)');
    const overwritten = await call(tools.write!, { path: 'sub/new.txt', content: 'one\n2\n' });
    expect(overwritten.text).toBe('wrote 6 bytes to sub/new.txt\nsub/new.txt: +1 −1 lines\n    2 - two\n    2 + 2');
    expect(applyWithPatch(dir, 'sub/new.txt', 'one\ntwo\n', overwritten.details.unified!)).toBe('one\n2\n');
  });

  it('refuses content over the byte limit, writing nothing', async () => {
    const { dir, tools } = setup();
    expect(await failure(tools.write!, { path: 'big.txt', content: 'x'.repeat(5 * 1024 * 1024 + 1) })).toMatch(/at most 5242880 per write/);
    expect(fs.existsSync(path.join(dir, 'agent', 'big.txt'))).toBe(false);
  });
});
