import { afterEach, describe, expect, it } from 'vitest';
import { Sweeper } from '../src/host/sweep.js';
import type { HostConfig } from '../src/host/types.js';
import { cleanupSessions, createTestSession } from './support/session.js';

/** The sweep against a real session DB: retries with back-off, give-up after max tries, recurrence. */
const config: HostConfig['sweep'] = { intervalMs: 1000, staleMs: 60_000, retryBaseMs: 1000, retryMaxMs: 10_000, maxTries: 3 };
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

  it('schedules the next occurrence of a recurring task in the session time zone, once', () => {
    const s = createTestSession();
    const { id } = s.insert({ kind: 'task', content: { prompt: 'standup' }, recurrence: '0 9 * * *', channelType: 'http', platformId: 'c' });
    s.db.prepare(`UPDATE messages_in SET status = 'completed', tries = 1 WHERE id = ?`).run(id);
    const sweeper = new Sweeper(s.db);
    const result = sweeper.sweep({ runnerAlive: false, batchIds: [], timezone: 'America/New_York', config });
    expect(result.scheduled).toHaveLength(1);
    const next = s.allInbound().find((r) => r.id !== id)!;
    expect(next).toMatchObject({ kind: 'task', status: 'pending', series_id: id, recurrence: '0 9 * * *', channel_type: 'http', platform_id: 'c' });
    const local = new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(next.process_after!));
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
