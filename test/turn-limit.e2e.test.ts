import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { startHost, stopAllHosts } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * The host's turn limit: a provider that never answers does not keep the session busy forever. The host kills the
 * runner, tells the chat, and the batch is retried like any failed one (here: given up after one try).
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

describe('turn limit', () => {
  it('ends a query that never answers, with a notice to the chat', async () => {
    const host = await startHost({ MOCK_DELAY_MS: '600000', PINCER_TURN_LIMIT_MS: '1500', PINCER_MAX_TRIES: '1' });
    const stream = host.stream('hung');
    const sent = await host.request('POST', '/v1/conversations/hung/messages', { text: 'are you stuck' });
    expect(sent.status).toBe(202);
    const notice = await stream.waitFor('the turn-limit notice', (e) => e.event === 'notice', 30_000);
    expect(String(notice.data.text)).toMatch(/^The agent did not finish within 2 s and was stopped; your message will be tried again/);
    expect(host.stderr()).toMatch(/its query ran past the turn limit \(1500 ms\); killing it/);
    const given = await stream.waitFor('given up after its one try', (e) => e.event === 'notice' && String(e.data.text).includes('given up'), 30_000);
    expect(String(given.data.text)).toContain('turn limit');
    const db = openSessionDb(path.join(host.sessionDir(String(sent.body.sessionId)), 'session.db'), { readonly: true });
    await waitFor(
      'the row failed',
      () => (db.prepare('SELECT status FROM messages_in WHERE id = ?').get(sent.body.id) as { status: string }).status === 'failed',
    );
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
