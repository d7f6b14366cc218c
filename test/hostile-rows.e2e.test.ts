import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertOutbound } from '../src/db/messages.js';
import { startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { runCli } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

/**
 * Rows an agent writes straight into its session DB (its own to write, in any runner mode) to hurt the host: usage
 * rows whose sum overflows, made-up model names as metric labels, and outbound rows by the thousand or by the
 * megabyte. Each against a real host with runners in the default sandbox.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

async function sessionOf(host: HostHandle, conversation: string): Promise<string> {
  const stream = host.stream(conversation);
  const sent = await host.request('POST', `/v1/conversations/${conversation}/messages`, { text: 'hi' });
  expect(sent.status).toBe(202);
  await stream.waitFor('the reply', (e) => e.event === 'chat', 90_000);
  stream.close();
  return sent.body.sessionId as string;
}

function dbOf(host: HostHandle, sessionId: string) {
  return openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
}

/** `n` turn_usage rows as the agent could write them. */
function writeUsage(host: HostHandle, sessionId: string, n: number, row: (i: number) => { model: string; tokens: number }): void {
  const db = dbOf(host, sessionId);
  const insert = db.prepare(
    `INSERT INTO turn_usage (turn_id, in_reply_to, series_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, duration_ms, by_model, created_at)
     VALUES (?, NULL, NULL, 'mock', ?, ?, ?, 0, 0, NULL, 1, NULL, ?)`,
  );
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const { model, tokens } = row(i);
      insert.run(randomUUID(), model, tokens, tokens, new Date().toISOString());
    }
  })();
  db.close();
}

async function usageTurns(host: HostHandle): Promise<number> {
  const res = await host.request('GET', '/v1/usage');
  return res.status === 200 ? Number((res.body.total as { turns: number }).turns) : -res.status;
}

describe('point 6: usage rows whose sum overflows', { timeout: 180_000 }, () => {
  it('do not make messages, /v1/usage or pincer usage fail for the group', async () => {
    const host = await startHost();
    const evil = await sessionOf(host, 'evil');
    expect((await host.request('PUT', '/v1/budgets/main', { period: 'daily', unit: 'tokens', amount: 1e12 })).status).toBe(200);
    // each row valid (≤ 2^53), together far past SQLite's 2^63
    writeUsage(host, evil, 1200, () => ({ model: 'mock', tokens: Number.MAX_SAFE_INTEGER }));
    await waitFor('the rows collected', async () => ((await usageTurns(host)) >= 1200 ? true : undefined), { timeoutMs: 60_000 });
    const usage = await host.request('GET', '/v1/usage');
    expect(usage.status).toBe(200);
    expect(Number.isFinite((usage.body.total as { inputTokens: number }).inputTokens)).toBe(true);
    const cli = await runCli(['usage', '--home', host.home]);
    expect(cli.status, cli.stderr).toBe(0);
    // another conversation of the group: refused as over its budget (what the rows claim), never a 500
    const other = await host.request('POST', '/v1/conversations/other/messages', { text: 'hello' });
    expect(other.status, JSON.stringify(other.body)).not.toBe(500);
    expect(other.body.code).toBe('over-budget');
    expect((await host.request('PUT', '/v1/budgets/main', { period: 'daily', unit: 'tokens', amount: null })).status).toBe(200);
    expect((await host.request('POST', '/v1/conversations/other/messages', { text: 'hello' })).status).toBe(202);
    expect(await host.stop()).toBe(0);
  });
});

describe('point 7: made-up model names', { timeout: 180_000 }, () => {
  it('add at most 50 label values to the metrics; the rest count as "other"', async () => {
    const host = await startHost();
    const evil = await sessionOf(host, 'evil');
    writeUsage(host, evil, 2000, (i) => ({ model: `made-up-model-${i}`, tokens: 1 }));
    await waitFor('the rows collected', async () => ((await usageTurns(host)) >= 2000 ? true : undefined), { timeoutMs: 60_000 });
    const metrics = await (await fetch(`http://127.0.0.1:${host.port}/metrics`)).text();
    const models = new Set([...metrics.matchAll(/^pincer_tokens_total\{[^}]*model="([^"]*)"/gm)].map((m) => m[1]));
    expect(models.size).toBeLessThanOrEqual(51);
    expect(models.has('other')).toBe(true);
    expect(metrics).toMatch(/^pincer_tokens_total\{model="other",type="input"\} (\d+)$/m);
    // the ledger keeps the real names
    const byModel = await host.request('GET', '/v1/usage?by=model');
    expect((byModel.body.rows as unknown[]).length).toBeGreaterThanOrEqual(2000);
    expect(await host.stop()).toBe(0);
  });
});

describe('point 9: outbound rows by the thousand and by the megabyte', { timeout: 240_000 }, () => {
  it('a row over 1 MiB and the rows beyond 1,000 waiting at once are not delivered; the agent is told', async () => {
    const host = await startHost();
    const evil = await sessionOf(host, 'evil');
    const db = dbOf(host, evil);
    const to = { channelType: 'http', platformId: 'evil', threadId: null, inReplyTo: null };
    db.transaction(() => {
      insertOutbound(db, { id: 'huge', kind: 'chat', content: { text: 'x'.repeat(2 * 1024 * 1024) }, routing: to });
      for (let i = 0; i < 1500; i++) insertOutbound(db, { id: `flood-${i}`, kind: 'chat', content: { text: `flood ${i}` }, routing: to });
    })();
    const huge = await waitFor(
      'the huge row refused',
      () => (db.prepare(`SELECT delivery_error FROM messages_out WHERE id = 'huge'`).get() as { delivery_error: string | null }).delivery_error ?? undefined,
      { timeoutMs: 60_000 },
    );
    expect(huge).toMatch(/not delivered: larger than 1048576 bytes/);
    const refused = db
      .prepare(`SELECT count(*) AS n FROM messages_out WHERE id LIKE 'flood-%' AND delivery_error LIKE 'not delivered: more than 1000 messages%'`)
      .get() as { n: number };
    expect(refused.n).toBe(500);
    // the refused ones are the newest: the first 1,000 are delivered
    await waitFor(
      'the first 1,000 delivered',
      () =>
        (db.prepare(`SELECT count(*) AS n FROM messages_out WHERE id LIKE 'flood-%' AND delivered_at IS NOT NULL`).get() as { n: number }).n === 1000
          ? true
          : undefined,
      { timeoutMs: 180_000 },
    );
    expect((db.prepare(`SELECT delivery_error FROM messages_out WHERE id = 'flood-999'`).get() as { delivery_error: string | null }).delivery_error).toBeNull();
    const notice = db.prepare(`SELECT content FROM messages_in WHERE kind = 'system' AND content LIKE '%were not delivered%'`).get() as
      { content: string } | undefined;
    expect(JSON.parse(notice!.content).error).toBe('501 of your messages were not delivered: 1 larger than 1048576 bytes, 500 beyond 1000 waiting at once');
    expect((await host.request('GET', '/v1/health', undefined, { token: null })).status).toBe(200);
    db.close();
    expect(await host.stop()).toBe(0);
  });
});
