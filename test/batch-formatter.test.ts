import { afterEach, describe, expect, it } from 'vitest';
import { parseInboundContent } from '../src/db/content.js';
import type { InboundRow } from '../src/db/types.js';
import { BatchFormatter } from '../src/runner/batch-formatter.js';
import { formatBatch, type FormattableMessage } from '../src/runner/format.js';
import type { FormatTasks } from '../src/runner/format-task.js';
import { CpuAdmission, liveWorkerCount, WorkerTaskPool, type WorkerPoolOptions } from '../src/runtime/worker-pool/index.js';
import type { Logger } from '../src/shared/log.js';

const pools: WorkerTaskPool<FormatTasks>[] = [];

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
  expect(liveWorkerCount()).toBe(0);
});

function message(seq: number, kind: string, content: unknown): FormattableMessage {
  const json = JSON.stringify(content);
  const parsed = parseInboundContent(kind, json);
  if (!parsed.ok) throw new Error(parsed.error);
  const row: InboundRow = {
    id: `id-${seq}`,
    seq,
    kind,
    timestamp: `2026-01-15T18:0${seq}:00.000Z`,
    status: 'processing',
    status_changed: null,
    process_after: null,
    recurrence: null,
    series_id: null,
    tries: 1,
    trigger: 1,
    platform_id: 'p',
    channel_type: 'c',
    thread_id: null,
    content: json,
    last_error: null,
  };
  return { row, message: parsed.value };
}

/** One of each kind, with notes and characters that need escaping. */
const MIXED: FormattableMessage[] = [
  { ...message(1, 'chat', { text: 'a <b> & "c"', sender: 'Ann', replyTo: { id: 'x', sender: 'Bob', text: 'q' } }), notes: ['[file available at: /w/f.txt]'] },
  message(2, 'task', { prompt: 'Daily report' }),
  message(3, 'webhook', { source: 'github', event: 'push', payload: { ref: 'main', n: [1, 2] } }),
  message(4, 'system', { action: 'register_agent_group', status: 'ok', result: { id: 'g1' } }),
  message(5, 'chat-sdk', { text: 'hi', author: { userId: 'u1', userName: 'cat', fullName: 'Cat' } }),
];

function recordingLog(): Logger & { lines: string[] } {
  const lines: string[] = [];
  const push = (level: string) => (m: string) => lines.push(`${level}: ${m}`);
  return { lines, debug: push('debug'), info: push('info'), warn: push('warn'), error: push('error') };
}

function pool(options: Partial<WorkerPoolOptions> = {}): WorkerTaskPool<FormatTasks> {
  const created = new WorkerTaskPool<FormatTasks>({
    name: 'format',
    tasks: new URL('../src/runner/format-task.js', import.meta.url),
    admission: new CpuAdmission(1),
    ...options,
  });
  pools.push(created);
  return created;
}

describe('BatchFormatter', () => {
  const options = { timeZone: 'Europe/Berlin' };
  const expected = formatBatch(MIXED, options);

  it('formats a large batch on a worker to exactly the inline prompt', async () => {
    const log = recordingLog();
    const prompt = await new BatchFormatter(pool(), 1, log).format(MIXED, options);
    expect(prompt).toBe(expected);
    expect(log.lines).toEqual([expect.stringMatching(/^info: formatted 5 messages \(0 KiB\) on a worker in \d+ ms$/)]);
  });

  it('formats a small batch inline without touching the pool', async () => {
    const log = recordingLog();
    const p = pool();
    expect(await new BatchFormatter(p, 1_000_000, log).format(MIXED, options)).toBe(expected);
    expect(p.stats.workers).toBe(0);
    expect(log.lines).toEqual([]);
  });

  it.each([
    { code: 'overloaded', make: () => pool({ maxPendingTasks: 0 }) },
    {
      code: 'unavailable',
      make: () => {
        const p = pool();
        void p.close();
        return p;
      },
    },
  ])('formats inline, with a warning, when the pool is $code', async ({ code, make }) => {
    const log = recordingLog();
    expect(await new BatchFormatter(make(), 1, log).format(MIXED, options)).toBe(expected);
    expect(log.lines).toEqual([expect.stringContaining(`warn: formatting on a worker failed (${code}: `)]);
  });
});
