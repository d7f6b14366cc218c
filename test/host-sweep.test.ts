import { afterEach, describe, expect, it } from 'vitest';
import { Sweeper } from '../src/host/session/sweep.js';
import { PRUNE_BATCH } from '../src/db/task-history.js';
import type { HostConfig } from '../src/host/types.js';
import { cleanupSessions, createTestSession } from './support/session.js';

/** The sweep against a real session DB: retries with back-off, give-up after max tries, recurrence. */
const config: HostConfig['sweep'] = {
  intervalMs: 1000,
  idleIntervalMs: 60_000,
  staleMs: 60_000,
  retryBaseMs: 1000,
  retryMaxMs: 10_000,
  maxTries: 3,
  taskHistory: { keepRuns: 20, keepDays: 7 },
};
const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

afterEach(() => cleanupSessions());

function processing(session: ReturnType<typeof createTestSession>, text: string, tries: number, changedAt: string) {
  const { id } = session.chat(text);
  session.db.prepare(`UPDATE messages_in SET status = 'processing', tries = ?, status_changed = ? WHERE id = ?`).run(tries, changedAt, id);
  return id;
}

describe('sweep', () => {
  it('leaves the live batch alone and resets only stale rows outside it, with exponential back-off', () => {
    const s = createTestSession();
    const inBatch = processing(s, 'in batch', 1, minutesAgo(10));
    const fresh = processing(s, 'just claimed', 1, new Date().toISOString());
    const stale = processing(s, 'stale', 2, minutesAgo(10));
    const before = Date.now();
    const result = new Sweeper(s.db).sweep({ runnerAlive: true, batchIds: [inBatch], timezone: 'UTC', config });
    expect(result.retried.map((r) => r.id)).toEqual([stale]);
    expect(s.inbound(inBatch).status).toBe('processing');
    expect(s.inbound(fresh).status).toBe('processing');
    const row = s.inbound(stale);
    expect(row.status).toBe('pending');
    expect(row.last_error).toBe('not in the runner batch');
    // try 2 failed → wait base × 2^(2−1) = 2 s
    const wait = Date.parse(row.process_after!) - before;
    expect(wait).toBeGreaterThanOrEqual(2000);
    expect(wait).toBeLessThan(2000 + 5000);
    expect(result.hasDue).toBe(false);
    expect(result.nextDueMs).toBeGreaterThan(0);
  });

  it('recovers every processing row of a dead runner and fails rows out of tries', () => {
    const s = createTestSession();
    const retry = processing(s, 'retry me', 1, new Date().toISOString());
    const done = processing(s, 'give up', 3, new Date().toISOString());
    s.db.prepare('UPDATE messages_in SET last_error = ? WHERE id = ?').run('mock error', done);
    const result = new Sweeper(s.db).sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config });
    expect(s.inbound(retry)).toMatchObject({ status: 'pending', last_error: 'the runner died' });
    expect(s.inbound(done)).toMatchObject({ status: 'failed', last_error: 'failed after 3 tries: mock error' });
    expect(result.failed.map((r) => r.id)).toEqual([done]);
  });

  it('gives up at once a row whose error the runner marked as one another try cannot fix, once out of the batch', () => {
    const s = createTestSession();
    const fatal = processing(s, 'rejected key', 1, new Date().toISOString()); // just claimed: not stale
    const ordinary = processing(s, 'ordinary error', 1, new Date().toISOString());
    s.db.prepare('UPDATE messages_in SET last_error = ?, no_retry = 1 WHERE id = ?').run('auth error: HTTP 401', fatal);
    s.db.prepare('UPDATE messages_in SET last_error = ? WHERE id = ?').run('server error: HTTP 500', ordinary);
    const sweeper = new Sweeper(s.db);
    // still in the runner's batch: left alone
    expect(sweeper.sweep({ runnerAlive: true, batchIds: [fatal, ordinary], timezone: 'UTC', config }).failed).toEqual([]);
    expect(s.inbound(fatal).status).toBe('processing');
    // the runner let go: failed at once, without waiting to be stale and without the tries left
    const result = sweeper.sweep({ runnerAlive: true, batchIds: [], timezone: 'UTC', config });
    expect(result.failed.map((r) => r.id)).toEqual([fatal]);
    expect(s.inbound(fatal)).toMatchObject({ status: 'failed', tries: 1, last_error: 'auth error: HTTP 401; not retried, as another try cannot fix it' });
    expect(s.inbound(ordinary).status).toBe('processing'); // waits to be stale, then is retried
  });

  it('leaves rows in work alone while a runner it does not know of still runs, and recovers them once it has ended', () => {
    const s = createTestSession();
    const held = processing(s, 'held by a runner whose supervisor died', 1, minutesAgo(10));
    const sweeper = new Sweeper(s.db);
    let unknownRunner = true;
    let asked = 0;
    const input = () => ({ runnerAlive: false, batchIds: [], timezone: 'UTC', config, unknownRunner: () => (asked++, unknownRunner) });
    const left = sweeper.sweep(input());
    expect(left.retried).toEqual([]);
    expect(left.inWork).toBe(true); // the engine keeps its short fallback: that runner's end writes nothing
    expect(s.inbound(held).status).toBe('processing');
    unknownRunner = false;
    const recovered = sweeper.sweep(input());
    expect(recovered.retried.map((r) => r.id)).toEqual([held]);
    expect(recovered.inWork).toBe(false);
    expect(s.inbound(held).status).toBe('pending');
    expect(asked).toBe(2);
    // nothing in work: nobody is asked (the question may spawn a probe)
    expect(sweeper.sweep(input()).inWork).toBe(false);
    expect(asked).toBe(2);
  });

  it('schedules the next occurrence of a recurring task in the session time zone, once', () => {
    const s = createTestSession();
    const { id } = s.insert({ kind: 'task', content: { prompt: 'standup' }, recurrence: '0 9 * * *', channelType: 'http', platformId: 'c' });
    s.db.prepare(`UPDATE messages_in SET status = 'completed', tries = 1 WHERE id = ?`).run(id);
    const sweeper = new Sweeper(s.db);
    const result = sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'America/New_York', config });
    expect(result.scheduled).toHaveLength(1);
    const next = s.allInbound().find((r) => r.id !== id)!;
    expect(next).toMatchObject({ kind: 'task', status: 'pending', series_id: id, recurrence: '0 9 * * *', channel_type: 'http', platform_id: 'c' });
    const local = new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(
      new Date(next.process_after!),
    );
    expect(local).toBe('09:00');
    expect(sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'America/New_York', config }).scheduled).toHaveLength(0);
    expect(s.allInbound()).toHaveLength(2);
  });

  it('does not continue a task that never ran (cancelled) and reports a bad cron once', () => {
    const s = createTestSession();
    const cancelled = s.insert({ kind: 'task', content: { prompt: 'x' }, recurrence: '* * * * *' });
    s.db.prepare(`UPDATE messages_in SET status = 'failed', last_error = 'cancelled' WHERE id = ?`).run(cancelled.id);
    const bad = s.insert({ kind: 'task', content: { prompt: 'y' }, recurrence: '99 * * * *' });
    s.db.prepare(`UPDATE messages_in SET status = 'completed', tries = 1 WHERE id = ?`).run(bad.id);
    const sweeper = new Sweeper(s.db);
    const first = sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config });
    expect(first.scheduled).toHaveLength(0);
    expect(first.recurrenceErrors.map((e) => e.row.id)).toEqual([bad.id]);
    expect(first.recurrenceErrors[0]!.error).toMatch(/recurrence "99 \* \* \* \*" is not a valid cron expression/);
    expect(sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config }).recurrenceErrors).toHaveLength(0);
    expect(s.allInbound()).toHaveLength(2);
  });
});

describe('task history', () => {
  const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();

  /** A task row that ran and finished at `endedAt`. */
  function finished(
    s: ReturnType<typeof createTestSession>,
    id: string,
    endedAt: string,
    extra: { series?: string; recurrence?: string; status?: string } = {},
  ) {
    s.insert({ id, kind: 'task', content: { prompt: id }, seriesId: extra.series ?? null, recurrence: extra.recurrence ?? null });
    s.db.prepare(`UPDATE messages_in SET status = ?, tries = 1, status_changed = ? WHERE id = ?`).run(extra.status ?? 'completed', endedAt, id);
  }

  it('keeps the newest runs of each task, finished tasks for some days, and everything live, waiting or newest', () => {
    const s = createTestSession();
    const runs = Array.from({ length: 25 }, (_, i) => `daily-${String(i).padStart(2, '0')}`);
    for (const id of runs) finished(s, id, minutesAgo(100 - Number(id.slice(-2))), { series: 'daily-00', recurrence: '0 9 * * *' });
    s.insert({
      id: 'daily-live',
      kind: 'task',
      content: { prompt: 'd' },
      seriesId: 'daily-00',
      recurrence: '0 9 * * *',
      processAfter: '2099-01-01T09:00:00.000Z',
    });
    finished(s, 'weekly-a', daysAgo(30), { recurrence: '0 9 * * 1' });
    s.insert({
      id: 'weekly-live',
      kind: 'task',
      content: { prompt: 'w' },
      seriesId: 'weekly-a',
      recurrence: '0 9 * * 1',
      processAfter: '2099-01-01T09:00:00.000Z',
    });
    finished(s, 'one-off-old', daysAgo(10));
    finished(s, 'one-off-recent', daysAgo(1));
    for (const id of ['cancelled-1', 'cancelled-2']) finished(s, id, daysAgo(10), { series: 'cancelled-1', status: 'failed' });
    finished(s, 'answer-waiting', daysAgo(10));
    s.db
      .prepare(`INSERT INTO messages_out (id, seq, in_reply_to, timestamp, kind, content) VALUES ('reply', 1000, 'answer-waiting', ?, 'chat', '{"text":"x"}')`)
      .run(daysAgo(10));
    const chat = s.chat('an old chat message');
    s.db.prepare(`UPDATE messages_in SET status = 'completed', status_changed = ? WHERE id = ?`).run(daysAgo(10), chat.id);
    finished(s, 'newest-row', daysAgo(10));

    const sweeper = new Sweeper(s.db);
    const first = sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config });
    const left = new Set(s.allInbound().map((r) => r.id));
    const gone = ['daily-00', 'daily-01', 'daily-02', 'daily-03', 'daily-04', 'one-off-old', 'cancelled-1', 'cancelled-2'];
    expect(first.pruned).toBe(gone.length);
    for (const id of gone) expect(left.has(id), id).toBe(false);
    for (const id of [...runs.slice(5), 'daily-live', 'weekly-a', 'weekly-live', 'one-off-recent', 'answer-waiting', chat.id, 'newest-row'])
      expect(left.has(id), id).toBe(true);
    expect(first.scheduled).toHaveLength(0);

    // Delivered now; the next prune (a minute later, or a new sweeper) lets it go. Within the minute nothing is read.
    s.db.prepare(`UPDATE messages_out SET delivered_at = ? WHERE id = 'reply'`).run(new Date().toISOString());
    expect(sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config }).pruned).toBe(0);
    expect(new Sweeper(s.db).sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config }).pruned).toBe(1);
    expect(s.allInbound().some((r) => r.id === 'answer-waiting')).toBe(false);
  });

  it('prunes an occurrence only after its successor is scheduled, so the series goes on', () => {
    const s = createTestSession();
    for (const id of ['m-1', 'm-2']) finished(s, id, minutesAgo(5), { series: 'm-1', recurrence: '* * * * *' });
    const result = new Sweeper(s.db).sweep({
      runnerAlive: false,
      batchIds: [],
      timezone: 'UTC',
      config: { ...config, taskHistory: { keepRuns: 1, keepDays: 0 } },
    });
    expect(result.scheduled.map((x) => x.row.id)).toEqual(['m-2']);
    expect(result.pruned).toBe(1);
    expect(s.allInbound().map((r) => [r.id === 'm-2' ? 'm-2' : r.status, r.series_id])).toEqual([
      ['m-2', 'm-1'],
      ['pending', 'm-1'],
    ]);
  });

  it('prunes a backlog in batches, the next sweep going on while batches are full', () => {
    const s = createTestSession();
    s.db.transaction(() => {
      for (let i = 0; i < PRUNE_BATCH + 100; i++) finished(s, `run-${i}`, minutesAgo(10), { series: 'run-0', recurrence: '* * * * *' });
      s.insert({
        id: 'run-live',
        kind: 'task',
        content: { prompt: 'r' },
        seriesId: 'run-0',
        recurrence: '* * * * *',
        processAfter: '2099-01-01T00:00:00.000Z',
      });
    })();
    const sweeper = new Sweeper(s.db);
    const policy = { ...config, taskHistory: { keepRuns: 1, keepDays: 7 } };
    expect(sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config: policy }).pruned).toBe(PRUNE_BATCH);
    expect(sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config: policy }).pruned).toBe(99);
    expect(sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'UTC', config: policy }).pruned).toBe(0);
    expect(s.allInbound().map((r) => r.id)).toEqual([`run-${PRUNE_BATCH + 99}`, 'run-live']);
  });
});
