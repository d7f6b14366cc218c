import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * A task whose pre-script runs longer than PINCER_STALE_MS (300 ms in the harness, 2 s by default) runs once: its row
 * is claimed and processing, outside the runner's batch, and the host's sweep used to take it for stale, put it back
 * to pending and start the script a second time while the first still ran (and the agent answered twice).
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('task scripts on a real host', { timeout: 90_000 }, () => {
  it('a script that runs for seconds runs once, and the agent answers once', async () => {
    // the default runner kind (bubblewrap here); a plain process runner needs scripts turned on
    const host = await startHost({ PINCER_UNSANDBOXED_SCRIPTS: '1' });
    const stream = host.stream('slow-script');
    const task = await host.request('POST', '/v1/conversations/slow-script/tasks', {
      prompt: 'report what the script found',
      processAfter: new Date().toISOString(),
      script: `sleep 3\necho '{"wakeAgent": true, "data": {"found": 7}}'`,
    });
    expect(task.status).toBe(202);
    const reply = await stream.waitFor('the answer', (e) => e.event === 'chat', 60_000);
    expect(reply.data.text).toContain('found');
    const db = openSessionDb(path.join(host.sessionDir(task.body.sessionId as string), 'session.db'));
    const row = await waitFor('the task completed', () => {
      const r = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(task.body.id) as InboundRow | undefined;
      return r?.status === 'completed' ? r : undefined;
    });
    db.close();
    // claimed once: a second run would have counted a second try
    expect(row.tries, host.stderr()).toBe(1);
    expect(host.stderr()).not.toMatch(/back to pending/);
    // and answered once
    expect(stream.events.filter((e) => e.event === 'chat')).toHaveLength(1);
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
