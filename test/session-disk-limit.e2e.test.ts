import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { bwrapWorks } from '../src/host/runner-kind.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * The session folder's total size, on a real host: an agent's task script writes 1 MiB files into
 * its folder, 200 of them, against a limit of 16 MiB. The host kills the runner long before the 200th, the task fails
 * with the notice, the chat is told, later messages are refused while the folder is full, and once the administrator
 * removed the files the conversation answers again. The check is the host's (src/host/session/disk-quota.ts).
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

const FILES = 200;

/**
 * Runs in the runner (bash, in the session's agent/ folder); each file is written whole (zeros allocate blocks). The count
 * is renamed into place: the kill may come between a write's truncation and its text.
 */
const FILL = [
  'mkdir -p fill',
  `i=0; while [ $i -lt ${FILES} ]; do head -c 1048576 /dev/zero > fill/f$i; i=$((i+1)); echo $i > count.new; mv count.new count; sleep 0.05; done`,
  `echo '{"wakeAgent":false}'`,
].join('\n');

describe('the session folder limit', { timeout: 180_000 }, () => {
  it.skipIf(!bwrapWorks())('stops an agent that fills its folder (bubblewrap)', async () => {
    const host = await startHost({ PINCER_RUNNER: 'bwrap', PINCER_SESSION_DISK: '16m', PINCER_STALE_MS: '60000' });
    const task = await host.request('POST', '/v1/conversations/filler/tasks', {
      prompt: 'p',
      processAfter: new Date().toISOString(),
      script: FILL,
    });
    expect(task.status).toBe(202);
    const sessionDir = host.sessionDir(task.body.sessionId as string);
    const db = openSessionDb(path.join(sessionDir, 'session.db'));
    const row = await waitFor(
      'the task to end',
      () => {
        const r = db.prepare('SELECT * FROM messages_in WHERE id = ?').get(task.body.id) as InboundRow | undefined;
        return r && (r.status === 'completed' || r.status === 'failed') ? r : undefined;
      },
      { timeoutMs: 120_000 },
    );
    db.close();
    const agent = path.join(sessionDir, 'agent');
    const written = Number(fs.readFileSync(path.join(agent, 'count'), 'utf8'));
    expect(row.status, `${row.last_error ?? ''}\n${host.stderr()}`).toBe('failed');
    expect(row.last_error).toContain('more than 16 MiB, its limit (PINCER_SESSION_DISK)');
    // stopped within about a second of passing the limit, not at the end of the script
    expect(written).toBeGreaterThanOrEqual(8);
    expect(written).toBeLessThan(FILES / 2);
    const history = host.stream('filler', { lastEventId: '0' });
    const notice = await history.waitFor('the notice', (e) => e.event === 'notice' && String(e.data.text).includes('session folder is full'), 30_000);
    expect(notice.data.text).toContain('cannot answer until files are removed');
    // while the folder is full, a message is refused with the same notice, and no runner starts for it
    const count = (): number => history.events.filter((e) => e.event === 'notice' && String(e.data.text).includes('session folder is full')).length;
    const before = count();
    const started = host.runnerPids().length;
    expect((await host.request('POST', '/v1/conversations/filler/messages', { text: 'hello?' })).status).toBe(202);
    await waitFor('the refusal', () => count() > before || undefined, { timeoutMs: 30_000 });
    expect(host.runnerPids()).toHaveLength(started);
    // the administrator makes room: the conversation works again
    fs.rmSync(path.join(agent, 'fill'), { recursive: true });
    expect((await host.request('POST', '/v1/conversations/filler/messages', { text: 'back?' })).status).toBe(202);
    const reply = await history.waitFor('the reply', (e) => e.event === 'chat' && String(e.data.text).includes('back?'), 60_000);
    expect(reply.data.text).toContain('back?</message>');
    history.close();
    expect(await host.stop()).toBe(0);
  });
});
