import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isBusyError, retryWhileBusy } from '../src/db/busy.js';
import { openSessionDb, SessionDbError } from '../src/db/connection.js';
import { parseInboundContent } from '../src/db/content.js';
import { findBySeq, insertInbound, insertOutbound } from '../src/db/messages.js';
import { migrate, SCHEMA_VERSION } from '../src/db/schema.js';
import { getSessionValue, initRunnerState, readRunnerState, setRunnerBatch, setSessionValue } from '../src/db/state.js';
import { cleanupSessions, createTestSession } from './support/session.js';

afterEach(() => cleanupSessions());

const noRouting = { platformId: null, channelType: null, threadId: null, inReplyTo: null };

describe('session database', () => {
  it('has the four tables of the contract, WAL and a busy timeout', () => {
    const { db } = createTestSession();
    const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['messages_in', 'messages_out', 'session_state', 'runner_state']));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('busy_timeout', { simple: true })).toBeGreaterThanOrEqual(5000);
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
  });

  it('allocates one increasing seq across messages_in and messages_out', () => {
    const { db } = createTestSession();
    const a = insertInbound(db, { kind: 'chat', content: { text: 'a', sender: 's' } });
    const b = insertOutbound(db, { kind: 'chat', content: { text: 'b' }, routing: noRouting });
    const c = insertInbound(db, { kind: 'chat', content: { text: 'c', sender: 's' } });
    expect([a.seq, b.seq, c.seq]).toEqual([1, 2, 3]);
    expect(findBySeq(db, 2)).toMatchObject({ table: 'messages_out', id: b.id, kind: 'chat' });
    expect(findBySeq(db, 99)).toBeUndefined();
  });

  it('follows the seq rule when an outside writer has used a higher seq', () => {
    const { db } = createTestSession();
    db.prepare(`INSERT INTO messages_out (id, seq, timestamp, kind, content) VALUES ('x', 41, '2026-01-01T00:00:00.000Z', 'chat', '{}')`).run();
    expect(insertInbound(db, { kind: 'task', content: { prompt: 'p' } }).seq).toBe(42);
  });

  it('migrates an old (version 1) file forward without losing rows', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-migrate-'));
    const file = path.join(dir, 'session.db');
    const old = new Database(file);
    migrate(old, 1);
    old
      .prepare(`INSERT INTO messages_in (id, seq, kind, timestamp, content) VALUES ('m1', 1, 'chat', '2026-01-01T00:00:00.000Z', '{"text":"hi","sender":"a"}')`)
      .run();
    expect(old.pragma('user_version', { simple: true })).toBe(1);
    const cols = (old.prepare('PRAGMA table_info(messages_in)').all() as { name: string }[]).map((c) => c.name);
    expect(cols).not.toContain('last_error');
    old.close();

    const db = openSessionDb(file);
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    const row = db.prepare(`SELECT id, last_error FROM messages_in`).get();
    expect(row).toEqual({ id: 'm1', last_error: null });
    expect(insertInbound(db, { kind: 'chat', content: { text: 'x', sender: 'a' } }).seq).toBe(2);
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it.each([
    ['missing', (dir: string) => path.join(dir, 'nope.db'), /session database not found/],
    [
      'not a database',
      (dir: string) => (fs.writeFileSync(path.join(dir, 'bad.db'), 'garbage'.repeat(200)), path.join(dir, 'bad.db')),
      /cannot open session database/,
    ],
  ])('refuses a %s file with a clear error', (_name, make, message) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bad-'));
    const file = make(dir);
    expect(() => openSessionDb(file)).toThrow(SessionDbError);
    expect(() => openSessionDb(file)).toThrow(message);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("waits out another connection's write lock with back-off, and throws anything else at once", async () => {
    const s = createTestSession();
    const writer = new Database(s.paths.db, { timeout: 20 }); // a short busy timeout: SQLITE_BUSY at once
    const locker = openSessionDb(s.paths.db);
    locker.exec('BEGIN IMMEDIATE');
    const lines: string[] = [];
    const write = (): number => writer.prepare(`INSERT INTO session_state (key, value, updated_at) VALUES ('k', 'v', 'now')`).run().changes;
    // the lock is released on the third failed try, so the fourth gets through
    const changes = await retryWhileBusy(write, {
      what: 'test value',
      warn: (line) => lines.push(line) === 3 && locker.exec('COMMIT'),
      baseMs: 1,
    });
    expect(changes).toBe(1);
    expect(lines).toEqual([
      'test value: database is locked (1 in a row), trying again in 1 ms',
      'test value: database is locked (2 in a row), trying again in 2 ms',
      'test value: database is locked (3 in a row), trying again in 4 ms',
    ]);
    expect(getSessionValue(s.db, 'k')).toBe('v');
    // not a lock: no retry
    await expect(retryWhileBusy(() => writer.exec('NOT SQL'), { what: 'bad', warn: (line) => lines.push(line) })).rejects.toThrow(/syntax error/);
    // a caller that gives up (a runner stopping) gets the lock error back
    locker.exec('BEGIN IMMEDIATE');
    const err = await retryWhileBusy(write, { what: 'x', warn: () => undefined, giveUp: () => true }).catch((e: unknown) => e);
    expect(isBusyError(err)).toBe(true);
    expect(lines).toHaveLength(3);
    locker.close();
    writer.close();
  });

  it('opens an up-to-date file while another connection holds the write lock', () => {
    const s = createTestSession();
    const locker = openSessionDb(s.paths.db);
    locker.exec('BEGIN IMMEDIATE');
    // opening took a write lock per migration: this waited the whole busy timeout, then failed
    const db = openSessionDb(s.paths.db);
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    db.close();
    locker.close();
  });

  it('keeps session_state per key and runner_state as one row', () => {
    const { db } = createTestSession();
    setSessionValue(db, 'mock:session_id', 's1');
    setSessionValue(db, 'mock:session_id', 's2');
    expect(getSessionValue(db, 'mock:session_id')).toBe('s2');
    initRunnerState(db, 123, 'mock');
    setRunnerBatch(db, 'busy', ['a', 'b'], { ...noRouting, platformId: 'p', inReplyTo: 'b' });
    initRunnerState(db, 456, 'mock');
    const state = readRunnerState(db)!;
    expect(state).toMatchObject({ pid: 456, state: 'starting', batchIds: [], routing: null });
  });
});

describe('content validation', () => {
  it.each([
    ['chat', { text: 'hi', sender: 'a' }],
    ['chat', { text: 'hi', sender: 'a', attachments: [{ type: 'image', name: 'x.png', data: 'AAAA' }], replyTo: { id: '1', sender: 'b', text: 'q' } }],
    ['chat-sdk', { text: 'hi', author: { userId: 'u', userName: 'john', fullName: 'John' } }],
    ['task', { prompt: 'p', script: 'echo {}' }],
    ['webhook', { source: 'github', event: 'push', payload: { a: 1 } }],
    ['system', { action: 'register_agent_group', status: 'success', result: { id: 'x' } }],
    ['system', { type: 'question_response', questionId: 'q', selectedOption: 'yes' }],
  ])('accepts valid %s content', (kind, content) => {
    expect(parseInboundContent(kind, JSON.stringify(content)).ok).toBe(true);
  });

  it.each([
    ['chat', '{"text": "unterminated', /content is not valid JSON/],
    ['chat', '{"text": "no sender"}', /invalid chat content: sender/],
    ['chat', '{"text": 5, "sender": "a"}', /invalid chat content: text/],
    ['task', '{"script": "x"}', /invalid task content: prompt/],
    ['webhook', '{"source": "gh"}', /invalid webhook content/],
    ['chat', '[]', /invalid chat content/],
    ['email', '{"text": "hi"}', /unknown kind "email" \(known: chat, chat-sdk, task, webhook, system\)/],
  ])('rejects %s content %s with a clear reason', (kind, content, reason) => {
    const result = parseInboundContent(kind, content);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toMatch(reason);
  });
});
