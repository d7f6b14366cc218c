import { CronExpressionParser } from 'cron-parser';
import { afterEach, describe, expect, it } from 'vitest';
import type { InboundRow } from '../src/db/types.js';
import { formatTime } from '../src/shared/time.js';
import { closeAllMcpClients, putBatchInFlight, startMcpClient } from './support/mcp-client.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';

/** The task tools through the real `pincer mcp` process, in a session whose time zone is Europe/Berlin. */
afterEach(async () => {
  expect(await closeAllMcpClients()).toBe(0);
  cleanupSessions();
});

const ZONE = 'Europe/Berlin';

async function setUp() {
  const s = createTestSession();
  const msg = s.chat('remind me', { platformId: 'C1', channelType: 'slack', threadId: 'T1' });
  putBatchInFlight(s.db, msg.id);
  const mcp = await startMcpClient(s.paths.root, { TZ: ZONE });
  return { s, msg, mcp };
}

function tasks(s: TestSession): InboundRow[] {
  return s.allInbound().filter((row) => row.kind === 'task');
}

function taskIdOf(text: string): string {
  return /^Task (\S+) scheduled/.exec(text)![1]!;
}

describe('schedule_task', () => {
  it('writes a task row to self; a time without a zone is read in the session zone', async () => {
    const { s, mcp } = await setUp();
    const result = await mcp.call('schedule_task', { prompt: 'Check the PRs', processAfter: '2031-01-15T09:00', script: 'echo {}' });
    expect(result.isError).toBe(false);
    expect(result.text).toContain('first run 2031-01-15 09:00 (Europe/Berlin)');
    const [task] = tasks(s);
    expect(task).toMatchObject({
      id: taskIdOf(result.text),
      series_id: taskIdOf(result.text),
      status: 'pending',
      process_after: '2031-01-15T08:00:00.000Z',
      recurrence: null,
      trigger: 1,
      platform_id: 'C1',
      channel_type: 'slack',
      thread_id: 'T1',
    });
    expect(JSON.parse(task!.content)).toEqual({ prompt: 'Check the PRs', script: 'echo {}' });

    await mcp.call('schedule_task', { prompt: 'UTC one', processAfter: '2031-07-01T09:00:00Z' });
    expect(tasks(s)[1]!.process_after).toBe('2031-07-01T09:00:00.000Z');
    await mcp.close();
  });

  it('a recurring task without processAfter first runs at the next time of its cron, in the session zone', async () => {
    const { s, mcp } = await setUp();
    const result = await mcp.call('schedule_task', { prompt: 'Standup', recurrence: '30 9 * * 1-5' });
    expect(result.isError).toBe(false);
    const [task] = tasks(s);
    const expected = CronExpressionParser.parse('30 9 * * 1-5', { tz: ZONE }).next().toISOString();
    expect(task).toMatchObject({ recurrence: '30 9 * * 1-5', process_after: expected, series_id: task!.id });
    expect(formatTime(task!.process_after!, ZONE)).toMatch(/ 09:30$/);
    await mcp.close();
  });
});

describe('list_tasks, pause_task, resume_task, cancel_task, update_task', () => {
  /** A recurring series whose first occurrence has run: the live row is the second, with the same series_id. */
  function seriesWithHistory(s: TestSession): { first: string; live: string } {
    const first = s.insert({ kind: 'task', content: { prompt: 'daily digest' }, recurrence: '0 8 * * *', processAfter: '2026-01-01T07:00:00.000Z' }).id;
    s.db.prepare(`UPDATE messages_in SET status = 'completed', series_id = id WHERE id = ?`).run(first);
    const live = s.insert({
      kind: 'task',
      content: { prompt: 'daily digest' },
      recurrence: '0 8 * * *',
      seriesId: first,
      processAfter: '2031-01-02T07:00:00.000Z',
    }).id;
    return { first, live };
  }

  it('list_tasks shows the active tasks with their series id, next time in the session zone and recurrence', async () => {
    const { s, mcp } = await setUp();
    const { first } = seriesWithHistory(s);
    const oneOff = s.insert({ kind: 'task', content: { prompt: 'water the plants' }, processAfter: '2031-01-01T11:00:00.000Z', status: 'paused' }).id;
    const listed = await mcp.call('list_tasks');
    expect(listed.isError).toBe(false);
    expect(listed.text.split('\n')).toEqual([
      'Scheduled tasks (times in Europe/Berlin):',
      `- ${oneOff} [paused] next 2031-01-01 12:00 · water the plants`,
      `- ${first} [pending] next 2031-01-02 08:00 · recurs "0 8 * * *" · daily digest`,
    ]);
    await mcp.close();
  });

  it('pause, resume and cancel reach the live occurrence through the first id of the series', async () => {
    const { s, mcp } = await setUp();
    const { first, live } = seriesWithHistory(s);
    expect(await mcp.call('pause_task', { taskId: first })).toEqual({ isError: false, text: `Task ${first} paused.` });
    expect(s.inbound(live).status).toBe('paused');
    expect(s.inbound(first).status).toBe('completed');
    expect((await mcp.call('pause_task', { taskId: first })).text).toBe(`Task ${first} is already paused.`);

    expect((await mcp.call('resume_task', { taskId: first })).text).toBe(`Task ${first} resumed; next run 2031-01-02 08:00 (Europe/Berlin).`);
    expect(s.inbound(live)).toMatchObject({ status: 'pending', process_after: '2031-01-02T07:00:00.000Z' });
    expect((await mcp.call('resume_task', { taskId: live })).text).toBe(`Task ${live} is not paused.`);

    expect(await mcp.call('cancel_task', { taskId: first })).toEqual({ isError: false, text: `Task ${first} cancelled.` });
    expect(s.inbound(live)).toMatchObject({ status: 'failed', recurrence: null, last_error: 'cancelled by the agent' });
    expect(await mcp.call('cancel_task', { taskId: first })).toMatchObject({ isError: true });
    expect((await mcp.call('list_tasks')).text).toBe('No scheduled tasks.');
    await mcp.close();
  });

  it('resuming a recurring task whose time passed while paused moves it to its next time', async () => {
    const { s, mcp } = await setUp();
    const id = s.insert({ kind: 'task', content: { prompt: 'p' }, recurrence: '0 8 * * *', processAfter: '2026-01-01T07:00:00.000Z', status: 'paused' }).id;
    expect((await mcp.call('resume_task', { taskId: id })).isError).toBe(false);
    const row = s.inbound(id);
    expect(row.status).toBe('pending');
    expect(row.process_after! > new Date().toISOString()).toBe(true);
    expect(formatTime(row.process_after!, ZONE)).toMatch(/ 08:00$/);
    await mcp.close();
  });

  it('update_task sends the merged fields to the host as a system action, times in UTC', async () => {
    const { s, msg, mcp } = await setUp();
    const { first, live } = seriesWithHistory(s);
    const result = await mcp.call('update_task', { taskId: first, prompt: 'weekly digest', processAfter: '2031-03-01 10:00', recurrence: '' });
    expect(result.isError).toBe(false);
    const row = s.outbound().at(-1)!;
    expect(row).toMatchObject({ kind: 'system', in_reply_to: msg.id, channel_type: 'slack' });
    expect(JSON.parse(row.content)).toEqual({
      action: 'update_task',
      taskId: first,
      prompt: 'weekly digest',
      processAfter: '2031-03-01T09:00:00.000Z',
      recurrence: null,
    });
    // The task row itself is the host's to change.
    expect(s.inbound(live).content).toBe(JSON.stringify({ prompt: 'daily digest' }));
    await mcp.close();
  });
});
