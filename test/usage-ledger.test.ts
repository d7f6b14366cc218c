import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { turnUsageAfter, insertTurnResult } from '../src/db/usage.js';
import { sessionCounts } from '../src/db/session-queries.js';
import { migrateCentral, CENTRAL_SCHEMA_VERSION } from '../src/host/central-db/schema.js';
import { CentralStore, openCentralDb } from '../src/host/central-db/store.js';
import { budgetWindow, Budgets } from '../src/host/usage/budgets.js';
import { UsageLedger } from '../src/host/usage/ledger.js';
import { HostUsage } from '../src/host/usage/host-usage.js';
import { PriceTable } from '../src/host/usage/prices.js';
import { parseSince, usageReport } from '../src/host/usage/report.js';
import { createLogger } from '../src/shared/log.js';
import { cleanupSessions, createTestSession } from './support/session.js';

/** The ledger against real SQLite files: copying from a (hostile) session DB, pricing, reports, budgets. */
const homes: string[] = [];
afterEach(() => {
  cleanupSessions();
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

const routing = { platformId: 'c1', channelType: 'http', threadId: null, inReplyTo: null };
const base = { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 0, durationMs: 50 };

function setup(timezone = 'UTC') {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-ledger-'));
  homes.push(home);
  const warnings: string[] = [];
  const store = new CentralStore(openCentralDb(path.join(home, 'pincer.db')));
  const group = store.createAgentGroup({ name: 'main', folder: 'main', provider: 'mock', timezone });
  const s = createTestSession();
  const session = store.insertSession({ id: 's-1', agentGroupId: group.id, channelType: 'http', platformId: 'c1', threadKey: '', folder: s.paths.root });
  const ledger = new UsageLedger(
    store.db,
    new PriceTable(),
    createLogger('host', (line) => warnings.push(line)),
  );
  return { home, store, group, s, session, ledger, warnings, budgets: new Budgets(store.db, ledger) };
}

describe("collecting a session's usage", () => {
  it('copies a few batches in one turn and says when rows are left, so the next turn looks again at once', async () => {
    const { store, s, session } = setup();
    const usage = new HostUsage(
      store.db,
      new PriceTable(),
      createLogger('host', () => undefined),
    );
    s.db.transaction(() => {
      for (let i = 0; i < 5000; i++) insertTurnResult(s.db, { routing, text: `t${i}`, provider: 'mock', usage: { ...base, model: 'mock' } });
    })();
    const latest = sessionCounts(s.db).lastUsageId;
    const read = async (after: number) => turnUsageAfter(s.db, after);
    expect(await usage.collect(session, read, latest)).toBe(true); // 8 batches of 500: 1,000 left
    expect((store.db.prepare('SELECT count(*) AS n FROM usage_ledger').get() as { n: number }).n).toBe(4000);
    expect(await usage.collect(session, read, latest)).toBe(false);
    expect((store.db.prepare('SELECT count(*) AS n FROM usage_ledger').get() as { n: number }).n).toBe(5000);
    expect(await usage.collect(session, read, latest)).toBe(false); // nothing left: not asked again and again
  });
});

describe('usage ledger', () => {
  it('migrates a version-1 central DB forward with its rows', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-central-'));
    homes.push(home);
    const old = new Database(path.join(home, 'pincer.db'));
    migrateCentral(old, 1);
    old
      .prepare(
        `INSERT INTO agent_groups (id, name, folder, provider, timezone, created_at) VALUES ('ag-1', 'main', 'main', 'mock', 'UTC', '2026-01-01T00:00:00.000Z')`,
      )
      .run();
    old.close();
    const store = new CentralStore(openCentralDb(path.join(home, 'pincer.db')));
    expect(store.db.pragma('user_version', { simple: true })).toBe(CENTRAL_SCHEMA_VERSION);
    expect(store.findAgentGroup('main')?.id).toBe('ag-1');
    expect(usageReport(store.db, {}).total.turns).toBe(0);
    store.db.close();
  });

  it('copies each turn once, per model, pricing only what the provider did not', async () => {
    const { s, session, ledger, store } = setup();
    const task = s.insert({ kind: 'task', content: { prompt: 'p' }, seriesId: 'daily-report' });
    insertTurnResult(s.db, { routing, text: 'a', provider: 'claude', usage: { ...base, model: 'claude-sonnet-4-5', costUsd: 0.25 } });
    insertTurnResult(s.db, {
      routing: { ...routing, inReplyTo: task.id },
      text: 'b',
      provider: 'codex',
      usage: { ...base, model: 'gpt-5', inputTokens: 2_000_000, outputTokens: 1_000_000, cacheReadTokens: 1_000_000 },
    });
    insertTurnResult(s.db, {
      routing,
      text: 'c',
      provider: 'claude',
      usage: {
        ...base,
        model: 'claude-sonnet-4-5',
        inputTokens: 30,
        outputTokens: 30,
        costUsd: 3,
        byModel: [
          { model: 'claude-sonnet-4-5', inputTokens: 10, outputTokens: 20, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 2 },
          { model: 'claude-haiku-4-5', inputTokens: 20, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 1 },
        ],
      },
    });
    insertTurnResult(s.db, { routing, text: 'd', provider: 'opencode', usage: { ...base, model: 'some-local-model' } });
    expect(await ledger.collect(session, async (after) => turnUsageAfter(s.db, after))).toHaveLength(4);
    expect(await ledger.collect(session, async (after) => turnUsageAfter(s.db, after))).toHaveLength(0); // the cursor moved: nothing twice
    // The session's newest row id not past the cursor: the session is not asked at all (a served session's round trip).
    const latest = sessionCounts(s.db).lastUsageId;
    expect(latest).toBeGreaterThan(0);
    let asked = 0;
    expect(await ledger.collect(session, async (after) => (asked++, turnUsageAfter(s.db, after)), latest)).toHaveLength(0);
    expect(asked).toBe(0);

    const byModel = usageReport(store.db, { by: 'model' });
    const row = (key: string) => byModel.rows.find((r) => r.key === key);
    expect(row('claude-sonnet-4-5')).toMatchObject({ turns: 2, inputTokens: 1010, costUsd: 2.25 });
    expect(row('claude-haiku-4-5')).toMatchObject({ turns: 1, inputTokens: 20, costUsd: 1 });
    // gpt-5 from the price table: 2M × $1.25 + 1M × $10 + 1M cached × $0.125
    expect(row('gpt-5')!.costUsd).toBeCloseTo(12.625, 9);
    expect(row('some-local-model')).toMatchObject({ costUsd: null, unpricedTurns: 1 });
    expect(byModel.total).toMatchObject({ turns: 4, unpricedTurns: 1 });
    expect(usageReport(store.db, { by: 'task' }).rows.map((r) => [r.key, r.turns])).toEqual([
      ['daily-report', 1],
      [null, 3],
    ]);
    expect(usageReport(store.db, { by: 'conversation' }).rows.map((r) => r.key)).toEqual(['http:c1']);
    const sources = store.db.prepare('SELECT model, cost_source FROM usage_ledger ORDER BY id').all();
    expect(sources).toEqual([
      { model: 'claude-sonnet-4-5', cost_source: 'provider' },
      { model: 'gpt-5', cost_source: 'price-table' },
      { model: 'claude-sonnet-4-5', cost_source: 'provider' },
      { model: 'claude-haiku-4-5', cost_source: 'provider' },
      { model: 'some-local-model', cost_source: null },
    ]);
  });

  it('skips rows an agent forged in its session DB, with a warning, and still copies the good ones', async () => {
    const { s, session, ledger, store, warnings } = setup();
    const insert = s.db.prepare(
      `INSERT INTO turn_usage (turn_id, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, duration_ms, by_model, created_at)
       VALUES (?, 'mock', ?, ?, 5, 0, 0, ?, 1, ?, ?)`,
    );
    insert.run('neg', 'm', -1000, null, null, '2026-01-01T00:00:00.000Z');
    insert.run('free', 'm', 10, -5, null, '2026-01-01T00:00:00.000Z');
    insert.run('junk', 'm', 10, null, 'not json', '2026-01-01T00:00:00.000Z');
    insert.run('future', 'm', 10, null, null, '2999-01-01T00:00:00.000Z');
    expect(await ledger.collect(session, async (after) => turnUsageAfter(s.db, after))).toHaveLength(1);
    expect(warnings.filter((w) => /usage row \d+ of session s-1 skipped: not valid/.test(w))).toHaveLength(3);
    // A row dated in the future counts now, not in a window nobody checks.
    const at = (store.db.prepare('SELECT at FROM usage_ledger').get() as { at: string }).at;
    expect(Date.parse(at)).toBeLessThanOrEqual(Date.now());
  });

  it('reads --since as a duration or a date, and refuses anything else clearly', () => {
    const now = new Date('2026-11-30T12:00:00.000Z');
    expect(parseSince('7d', now)).toBe('2026-11-23T12:00:00.000Z');
    expect(parseSince('24h', now)).toBe('2026-11-29T12:00:00.000Z');
    expect(parseSince('2026-11-01', now)).toBe('2026-11-01T00:00:00.000Z');
    expect(() => parseSince('yesterday', now)).toThrow(/since: "yesterday" is not a duration \(30m, 24h, 7d, 2w\) or a date/);
  });

  it('bad prices.json fails with the file and field named', () => {
    const { home } = setup();
    const file = path.join(home, 'prices.json');
    fs.writeFileSync(file, JSON.stringify({ 'my-model': { input: 1, output: -2 } }));
    expect(() => PriceTable.load(file)).toThrow(/prices\.json: my-model\.output: /);
    fs.writeFileSync(file, JSON.stringify({ 'my-model': { input: 1, output: 2 } }));
    expect(PriceTable.load(file).cost({ model: 'my-model-v2', inputTokens: 1_000_000, outputTokens: 1_000_000, cacheReadTokens: 0, cacheWriteTokens: 0 })).toBe(
      3,
    );
  });
});

describe('usage seen at the credential proxy', () => {
  it('the ledger rows of a version-11 central DB survive the move to sources, and count', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-central-'));
    homes.push(home);
    const old = new Database(path.join(home, 'pincer.db'));
    migrateCentral(old, 11);
    old
      .prepare(
        `INSERT INTO usage_ledger (session_id, turn_id, agent_group_id, conversation, provider, model, at, input_tokens, output_tokens,
           cache_read_tokens, cache_write_tokens, cost_usd, cost_source, duration_ms)
         VALUES ('s', 't', 'ag', 'http:c', 'mock', 'm', '2026-01-01T00:00:00.000Z', 7, 3, 0, 0, 0.5, 'provider', 1)`,
      )
      .run();
    old.close();
    const store = new CentralStore(openCentralDb(path.join(home, 'pincer.db')));
    expect(usageReport(store.db, { since: '2020-01-01' }).total).toMatchObject({ turns: 1, calls: 0, inputTokens: 7, costUsd: 0.5 });
    store.db.close();
  });

  const usage = { model: 'claude-haiku-4-5', inputTokens: 1000, outputTokens: 200, cacheReadTokens: 0, cacheWriteTokens: 0 };

  it('always counts; the runner row of a turn whose calls it saw is a hint, not counted twice; its calls take the turn and series', async () => {
    const { s, session, ledger, store, group } = setup();
    const a = ledger.startCall({ sessionId: session.id, agentGroupId: group.id, conversation: 'http:c1', api: 'anthropic' });
    const b = ledger.startCall({ sessionId: session.id, agentGroupId: group.id, conversation: 'http:c1', api: 'anthropic' });
    // in flight: counted as calls with no tokens yet
    expect(usageReport(store.db, {}).total).toMatchObject({ calls: 2, inputTokens: 0, costUsd: 0 });
    expect(ledger.finishCall(a, usage, 120)?.costUsd).toBeCloseTo((1000 * 1 + 200 * 5) / 1e6, 12);
    ledger.finishCall(b, usage, 80);
    // the runner reports the same turn (its own numbers, smaller: the session DB is the agent's)
    const task = s.insert({ kind: 'task', content: { prompt: 'p' }, seriesId: 'nightly' });
    insertTurnResult(s.db, {
      routing: { ...routing, inReplyTo: task.id },
      text: 'a',
      provider: 'claude',
      usage: { ...base, model: 'claude-haiku-4-5', inputTokens: 1, outputTokens: 1, costUsd: 0.000001, durationMs: 5000 },
    });
    const [turn] = await ledger.collect(session, async (after) => turnUsageAfter(s.db, after));
    expect(turn?.hint).toBe(true);
    const total = usageReport(store.db, {}).total;
    expect(total).toMatchObject({ turns: 1, calls: 2, inputTokens: 2000, outputTokens: 400 });
    expect(total.costUsd).toBeCloseTo(0.004, 12);
    expect(ledger.spent(group.id, '2000-01-01T00:00:00.000Z').tokens).toBe(2400);
    expect(usageReport(store.db, { by: 'task' }).rows.map((r) => [r.key, r.turns, r.calls])).toEqual([['nightly', 1, 2]]);
  });

  it('a turn the proxy saw no call of counts as the runner reported it; a call outside any turn counts as one', async () => {
    const { s, session, ledger, store, group } = setup();
    insertTurnResult(s.db, { routing, text: 'a', provider: 'mock', usage: { ...base, model: 'm' } });
    const [turn] = await ledger.collect(session, async (after) => turnUsageAfter(s.db, after));
    expect(turn?.hint).toBe(false);
    const id = ledger.startCall({ sessionId: session.id, agentGroupId: group.id, conversation: 'http:c1', api: 'openai' });
    ledger.finishCall(id, { model: 'gpt-5', inputTokens: 10, outputTokens: 5, cacheReadTokens: 0, cacheWriteTokens: 0 }, 10);
    const unanswered = ledger.startCall({ sessionId: session.id, agentGroupId: group.id, conversation: 'http:c1', api: 'openai' });
    expect(ledger.finishCall(unanswered, undefined, 10)).toBeUndefined();
    expect(usageReport(store.db, {}).total).toMatchObject({ turns: 3, calls: 2, inputTokens: 1010, outputTokens: 105, unpricedTurns: 1 });
  });
  it('a call whose model the price table does not know takes the cost the runner reported for that model', async () => {
    const { s, session, ledger, store, group } = setup();
    const id = ledger.startCall({ sessionId: session.id, agentGroupId: group.id, conversation: 'http:c1', api: 'anthropic' });
    expect(ledger.finishCall(id, { ...usage, model: 'claude-next-9' }, 10)?.costUsd).toBeUndefined();
    insertTurnResult(s.db, { routing, text: 'a', provider: 'claude', usage: { ...base, model: 'claude-next-9', costUsd: 0.3 } });
    await ledger.collect(session, async (after) => turnUsageAfter(s.db, after));
    expect(usageReport(store.db, {}).total).toMatchObject({ calls: 1, inputTokens: 1000, costUsd: 0.3, unpricedTurns: 0 });
    expect(store.db.prepare(`SELECT cost_source FROM usage_ledger WHERE source = 'proxy'`).get()).toEqual({ cost_source: 'runner' });
  });
});

describe('budgets', () => {
  it('windows are the day and the month in the group time zone', async () => {
    const now = new Date('2026-11-30T23:30:00.000Z');
    expect(budgetWindow('daily', 'UTC', now)).toEqual({ start: '2026-11-30T00:00:00.000Z', end: '2026-12-01T00:00:00.000Z' });
    expect(budgetWindow('daily', 'Asia/Tokyo', now)).toEqual({ start: '2026-11-30T15:00:00.000Z', end: '2026-12-01T15:00:00.000Z' });
    expect(budgetWindow('monthly', 'America/New_York', now)).toEqual({ start: '2026-11-01T04:00:00.000Z', end: '2026-12-01T05:00:00.000Z' });
    expect(budgetWindow('monthly', 'UTC', new Date('2026-12-31T10:00:00.000Z')).end).toBe('2027-01-01T00:00:00.000Z');
  });

  it.each([
    ['daily', 'tokens', 1100, /daily budget of 1,100 tokens \(1,100 tokens used today\)/],
    ['monthly', 'usd', 0.5, /monthly budget of \$0\.50 \(\$0\.50 used this month\)/],
  ] as const)('a %s %s limit refuses once reached and says so', async (period, unit, amount, notice) => {
    const { s, session, ledger, group, budgets } = setup();
    budgets.set(group.id, period, unit, amount);
    expect(budgets.check(group).over).toBe(false);
    insertTurnResult(s.db, { routing, text: 'a', provider: 'mock', usage: { ...base, model: 'm', costUsd: 0.5 } });
    await ledger.collect(session, async (after) => turnUsageAfter(s.db, after));
    const verdict = budgets.check(group);
    expect(verdict.over).toBe(true);
    if (!verdict.over) return;
    expect(verdict.notice).toMatch(notice);
    expect(verdict.notice).toMatch(new RegExp(`pincer budget set main --${period}-${unit} <amount>`));
    budgets.set(group.id, period, unit, amount * 2);
    expect(budgets.check(group).over).toBe(false);
    expect(budgets.clear(group.id)).toBe(1);
  });
});
