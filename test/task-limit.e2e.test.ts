import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ACTIVE_TASKS } from '../src/db/task-limit.js';
import { startHost, stopAllHosts } from './support/host-harness.js';

/** A session takes at most MAX_ACTIVE_TASKS waiting tasks; the next one is refused with what to do. */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('active tasks per session', () => {
  it('refuses the task over the limit with a clear error', async () => {
    const host = await startHost();
    for (let i = 0; i < MAX_ACTIVE_TASKS; i++) {
      const res = await host.request('POST', '/v1/conversations/busy/tasks', { prompt: `task ${i}`, recurrence: '0 9 * * *' });
      expect(res.status).toBe(202);
    }
    const over = await host.request('POST', '/v1/conversations/busy/tasks', { prompt: 'one too many', recurrence: '0 9 * * *' });
    expect(over.status).toBe(400);
    expect(over.body.error).toBe(`this session already has ${MAX_ACTIVE_TASKS} active tasks (at most ${MAX_ACTIVE_TASKS}): cancel some before scheduling more`);
    // Chat messages to the same session still go through.
    expect((await host.request('POST', '/v1/conversations/busy/messages', { text: 'hello' })).status).toBe(202);
    expect(await host.stop()).toBe(0);
  }, 60_000);
});
