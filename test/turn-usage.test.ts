import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { migrate, SCHEMA_VERSION } from '../src/db/schema.js';
import { insertTurnResult, turnUsageAfter } from '../src/db/usage.js';
import { startRunner, stopAllRunners } from './support/runner-harness.js';
import { promptText, recorded, recordFile } from './support/mock-record.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/** The per-turn usage a runner records in its session DB with each answer (what the host's ledger is built from). */
afterEach(async () => {
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

const routing = { platformId: 'p', channelType: 'http', threadId: null, inReplyTo: null };
const usage = { model: 'm', inputTokens: 10, outputTokens: 20, cacheReadTokens: 3, cacheWriteTokens: 4, costUsd: 0.5, durationMs: 12 };

describe('turn_usage in the session DB', () => {
  it('migrates a version-2 file forward: old rows kept, usage table added', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-usage-migrate-'));
    const file = path.join(dir, 'session.db');
    const old = new Database(file);
    migrate(old, 2);
    old
      .prepare(`INSERT INTO messages_in (id, seq, kind, timestamp, content) VALUES ('m1', 1, 'chat', '2026-01-01T00:00:00.000Z', '{"text":"hi","sender":"a"}')`)
      .run();
    expect(old.prepare(`SELECT name FROM sqlite_master WHERE name = 'turn_usage'`).get()).toBeUndefined();
    old.close();

    const db = openSessionDb(file);
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.prepare('SELECT id FROM messages_in').all()).toEqual([{ id: 'm1' }]);
    insertTurnResult(db, { routing: { ...routing, inReplyTo: 'm1' }, text: 'answer', usage, provider: 'mock' });
    expect(turnUsageAfter(db, 0)).toMatchObject([{ in_reply_to: 'm1', input_tokens: 10, cost_usd: 0.5 }]);
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes the answer and its usage in one transaction: neither without the other', () => {
    const { db, outbound } = createTestSession();
    db.exec(`CREATE TEMP TRIGGER usage_fails BEFORE INSERT ON turn_usage BEGIN SELECT RAISE(ABORT, 'disk is full'); END`);
    expect(() => insertTurnResult(db, { routing, text: 'answer', usage, provider: 'mock' })).toThrow(/disk is full/);
    expect(outbound()).toEqual([]);
    db.exec('DROP TRIGGER usage_fails');
    const { outboundId } = insertTurnResult(db, { routing, text: 'answer', usage, provider: 'mock' });
    expect(outbound().map((row) => row.id)).toEqual([outboundId]);
    expect(turnUsageAfter(db, 0).map((row) => row.turn_id)).toEqual([outboundId]);
  });

  it('records a turn that answered only through tools (no text), and the task series of a task turn', () => {
    const s = createTestSession();
    const task = s.insert({ kind: 'task', content: { prompt: 'p' }, seriesId: 'series-7' });
    const { outboundId } = insertTurnResult(s.db, { routing: { ...routing, inReplyTo: task.id }, text: null, usage, provider: 'codex' });
    expect(outboundId).toBeNull();
    expect(s.outbound()).toEqual([]);
    expect(turnUsageAfter(s.db, 0)).toMatchObject([{ series_id: 'series-7', provider: 'codex', by_model: null }]);
  });
});

describe('the runner records usage with each answer', () => {
  it('the mock reports deterministic usage that lands beside its answer', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const { id } = s.chat('hello', { platformId: 'chan-1', channelType: 'http' });
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    const [reply] = s.outbound();
    const prompt = promptText(recorded(s)[0]!);
    const answer = String(JSON.parse(reply!.content).text);
    const [row] = turnUsageAfter(s.db, 0);
    expect(row).toMatchObject({
      turn_id: reply!.id,
      in_reply_to: id,
      series_id: null,
      provider: 'mock',
      model: 'mock',
      input_tokens: prompt.length,
      output_tokens: answer.length,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      duration_ms: 0,
    });
    expect(row!.cost_usd).toBeCloseTo((prompt.length + 2 * answer.length) / 1e6, 12);
    expect(await runner.stop()).toBe(0);
  });

  it('MOCK_USAGE replaces the numbers; a bad value stops the runner with a clear line', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_USAGE: JSON.stringify({ model: 'big', inputTokens: 1000, costUsd: 2 }) });
    const { id } = s.chat('hello');
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    expect(turnUsageAfter(s.db, 0)).toMatchObject([{ model: 'big', input_tokens: 1000, cost_usd: 2 }]);
    expect(await runner.stop()).toBe(0);

    const bad = startRunner(s.paths.root, { MOCK_USAGE: '{"inputTokens": -1}' });
    expect(await bad.exited).not.toBe(0);
    expect(bad.stderr()).toMatch(/MOCK_USAGE must be a JSON object of usage fields/);
  });
});
