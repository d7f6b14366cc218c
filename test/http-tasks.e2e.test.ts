import { afterEach, describe, expect, it } from 'vitest';
import { taskRowsOf as taskRows } from './support/platform-host.js';
import { startHost, stopAllHosts } from './support/host-harness.js';

/** Tasks and conversations over HTTP, through the real `pincer host --http 0` with real runners (mock provider). */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('tasks over HTTP', () => {
  it('lists, gets, pauses, resumes, changes and cancels a weekday task', async () => {
    const host = await startHost();
    const created = await host.request('POST', '/v1/conversations/standup/tasks', { prompt: 'Review open PRs', recurrence: '0 9 * * 1-5' });
    expect(created.status).toBe(202);
    const { id, sessionId } = created.body as { id: string; sessionId: string };

    const list = await host.request('GET', '/v1/tasks');
    expect(list.body.tasks).toEqual([
      expect.objectContaining({
        id,
        sessionId,
        conversation: 'standup',
        channelType: 'http',
        status: 'pending',
        prompt: 'Review open PRs',
        recurrence: '0 9 * * 1-5',
        timezone: 'UTC',
      }),
    ]);
    expect((await host.request('GET', `/v1/tasks/${id}`)).body).toMatchObject({ id, status: 'pending' });

    expect((await host.request('POST', `/v1/tasks/${id}/pause`)).body).toMatchObject({ id, status: 'paused' });
    expect(taskRows(host, sessionId)[0]!.status).toBe('paused');
    expect((await host.request('POST', `/v1/tasks/${id}/pause`)).body).toMatchObject({ status: 'paused' });
    expect((await host.request('POST', `/v1/tasks/${id}/resume`)).body).toMatchObject({ id, status: 'pending' });

    const changed = await host.request('PATCH', `/v1/tasks/${id}`, { prompt: 'Review open PRs and issues', recurrence: '30 8 * * 1-5' });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id, prompt: 'Review open PRs and issues', recurrence: '30 8 * * 1-5' });
    // the next run follows the new rule: a weekday at 08:30 UTC (it was computed for 09:00 by the old one)
    const next = new Date(changed.body.processAfter as string);
    expect([next.getUTCHours(), next.getUTCMinutes()]).toEqual([8, 30]);
    expect([0, 6]).not.toContain(next.getUTCDay());

    // bad input: a clear error naming the field, and the task is as it was
    const badCron = await host.request('PATCH', `/v1/tasks/${id}`, { recurrence: 'every tuesday' });
    expect(badCron.status).toBe(400);
    expect(badCron.body).toMatchObject({
      field: 'recurrence',
      error: expect.stringMatching(/recurrence "every tuesday" is not a cron expression of 5 fields/),
    });
    const badTime = await host.request('PATCH', `/v1/tasks/${id}`, { processAfter: 'tomorrowish' });
    expect(badTime.status).toBe(400);
    expect(badTime.body.field).toBe('processAfter');
    const nothing = await host.request('PATCH', `/v1/tasks/${id}`, {});
    expect(nothing.status).toBe(400);
    expect(nothing.body.error).toMatch(/nothing to change/);
    const unknownField = await host.request('PATCH', `/v1/tasks/${id}`, { promt: 'typo' });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.error).toMatch(/promt/);
    expect((await host.request('GET', `/v1/tasks/${id}`)).body).toMatchObject({ prompt: 'Review open PRs and issues', recurrence: '30 8 * * 1-5' });

    expect((await host.request('POST', `/v1/tasks/${id}/cancel`)).body).toEqual({ id, status: 'cancelled' });
    expect((await host.request('GET', '/v1/tasks')).body.tasks).toEqual([]);
    const gone = await host.request('GET', `/v1/tasks/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatch(/no active task/);
    expect((await host.request('POST', `/v1/tasks/${id}/resume`)).status).toBe(404);
    const [row] = taskRows(host, sessionId);
    expect(row).toMatchObject({ status: 'failed', recurrence: null, last_error: 'cancelled over HTTP' });
    expect(await host.stop()).toBe(0);
  });

  it('runs a paused one-off task only once it is moved to now and resumed', async () => {
    const host = await startHost();
    const stream = host.stream('later');
    const { id, sessionId } = (await host.request('POST', '/v1/conversations/later/tasks', { prompt: 'water the plants', processAfter: '2099-01-01T09:00' }))
      .body as {
      id: string;
      sessionId: string;
    };
    await host.request('POST', `/v1/tasks/${id}/pause`);
    const moved = await host.request('PATCH', `/v1/tasks/${id}`, { processAfter: '2020-01-01T00:00Z' });
    expect(moved.body).toMatchObject({ status: 'paused', processAfter: '2020-01-01T00:00:00.000Z' });
    expect(taskRows(host, sessionId)[0]!.status).toBe('paused');
    await host.request('POST', `/v1/tasks/${id}/resume`);
    const answer = await stream.waitFor('the task ran', (e) => e.event === 'chat');
    expect(String(answer.data.text)).toContain('[SCHEDULED TASK]');
    expect(String(answer.data.text)).toContain('water the plants');
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('lists the conversations of the HTTP channel with their sessions and last event', async () => {
    const host = await startHost();
    const stream = host.stream('one');
    await host.request('POST', '/v1/conversations/one/messages', { text: 'hi' });
    const reply = await stream.waitFor('reply', (e) => e.event === 'chat');
    await host.request('POST', '/v1/conversations/two/tasks', { prompt: 'x', processAfter: '2099-01-01T00:00Z' });
    const { conversations } = (await host.request('GET', '/v1/conversations')).body as {
      conversations: { id: string; lastEventId: number | null; sessions: unknown[] }[];
    };
    expect(conversations.map((c) => c.id).sort()).toEqual(['one', 'two']);
    expect(conversations.find((c) => c.id === 'one')).toMatchObject({
      lastEventId: Number(reply.id),
      sessions: [expect.objectContaining({ platformId: 'one' })],
    });
    expect(conversations.find((c) => c.id === 'two')).toMatchObject({ lastEventId: null });
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
