import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { startHost, stopAllHosts, type HostHandle, type SseStream } from './support/host-harness.js';
import { taskRowsOf as taskRows } from './support/platform-host.js';
import { waitFor } from './support/wait.js';

/**
 * Finished task rows are pruned by the host's sweep: a recurring task really runs several times through the runner,
 * a one-off task runs once; a host started with PINCER_TASK_KEEP_RUNS=2 and PINCER_TASK_KEEP_DAYS=0 deletes the older
 * runs and the finished one-off on its first sweep, keeps the newest runs and the live occurrence, and the series
 * goes on running.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

/** Make the task's live occurrence due now (as if its time had come) and wait for its answer and its successor. */
async function runOccurrence(host: HostHandle, stream: SseStream, sessionId: string, seriesId: string, answers: number): Promise<void> {
  const live = taskRows(host, sessionId).find((r) => r.status === 'pending' && (r.series_id ?? r.id) === seriesId)!;
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
  db.prepare('UPDATE messages_in SET process_after = ? WHERE id = ?').run(new Date().toISOString(), live.id);
  db.close();
  await stream.waitFor(`answer ${answers}`, () => stream.events.filter((e) => e.event === 'chat').length >= answers, 60_000);
  await waitFor('the next occurrence', () => taskRows(host, sessionId).some((r) => r.status === 'pending' && r.id !== live.id) || undefined, {
    timeoutMs: 20_000,
  });
}

describe('finished task rows', () => {
  it('are pruned by the sweep: older runs and finished one-off tasks go, the newest runs and the series stay', async () => {
    const first = await startHost();
    const stream = first.stream('reports');
    const oneOff = await first.request('POST', '/v1/conversations/reports/tasks', { prompt: 'once', processAfter: new Date().toISOString() });
    expect(oneOff.status).toBe(202);
    await stream.waitFor('the one-off answer', (e) => e.event === 'chat', 60_000);
    const sessionId = String(oneOff.body.sessionId);
    const daily = await first.request('POST', '/v1/conversations/reports/tasks', { prompt: 'daily report', recurrence: '0 9 * * *' });
    const seriesId = String(daily.body.id);
    for (let run = 1; run <= 4; run++) await runOccurrence(first, stream, sessionId, seriesId, 1 + run);
    stream.close();
    expect(await first.stop()).toBe(0);
    const before = taskRows(first, sessionId);
    const series = (rows: InboundRow[]) => rows.filter((r) => (r.series_id ?? r.id) === seriesId);
    expect(series(before).map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'completed', 'pending']);
    expect(before.find((r) => r.id === oneOff.body.id)?.status).toBe('completed');

    const second = await startHost({ PINCER_TASK_KEEP_RUNS: '2', PINCER_TASK_KEEP_DAYS: '0' }, first.home);
    await waitFor('the prune', () => second.stderr().includes(`pruned 3 finished task rows in ${sessionId}`) || undefined, { timeoutMs: 20_000 });
    const after = taskRows(second, sessionId);
    expect(series(after).map((r) => r.id)).toEqual(
      series(before)
        .slice(2)
        .map((r) => r.id),
    );
    expect(after.some((r) => r.id === oneOff.body.id)).toBe(false);
    const listed = await second.request('GET', '/v1/tasks');
    expect(listed.body.tasks).toEqual([expect.objectContaining({ id: seriesId, status: 'pending', recurrence: '0 9 * * *' })]);

    // The series goes on after the prune.
    const again = second.stream('reports');
    await runOccurrence(second, again, sessionId, seriesId, 1);
    expect(series(taskRows(second, sessionId)).map((r) => r.status)).toEqual(['completed', 'completed', 'completed', 'pending']);
    again.close();
    expect(await second.stop()).toBe(0);
  }, 180_000);
});
