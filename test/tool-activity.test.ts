import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { migrate, SCHEMA_VERSION } from '../src/db/schema.js';
import { initRunnerState } from '../src/db/state.js';
import {
  cleanText,
  MAX_NAME,
  MAX_PREVIEW,
  previewArgs,
  READ_LIMIT,
  recentToolActivity,
  recordToolEnd,
  recordToolStart,
  type ToolActivity,
} from '../src/db/tool-activity.js';
import type { ChannelAdapter } from '../src/host/channels/types.js';
import type { SessionHandle } from '../src/host/session/delivery.js';
import { idleSessionState, type SessionState } from '../src/host/session/port.js';
import { ToolActivityStage } from '../src/host/session/tool-activity.js';
import type { ConversationRef } from '../src/host/types.js';
import { cleanupSessions, createTestSession } from './support/session.js';

afterEach(() => cleanupSessions());

const routing = { channelType: 'http', platformId: 'c1', threadId: null, inReplyTo: null };

describe('tool_activity in the session database', () => {
  it('is added by migration 5 to a version-4 file, which keeps its rows', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-tools-migrate-'));
    const file = path.join(dir, 'session.db');
    const old = new Database(file);
    migrate(old, 4);
    old.prepare(`INSERT INTO session_state (key, value, updated_at) VALUES ('k', 'v', 'now')`).run();
    expect(old.prepare(`SELECT name FROM sqlite_master WHERE name = 'tool_activity'`).get()).toBeUndefined();
    old.close();
    const db = openSessionDb(file);
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(5);
    expect(db.prepare(`SELECT value FROM session_state WHERE key = 'k'`).pluck().get()).toBe('v');
    recordToolStart(db, { callId: 'c', name: 'bash', args: { command: 'ls' } }, routing);
    expect(recentToolActivity(db)).toHaveLength(1);
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('records a call from start to end with its preview and the batch routing; a new runner fails what was left running', () => {
    const { db } = createTestSession();
    recordToolStart(db, { callId: 'a', name: 'bash', args: { command: 'ls -la', timeout: 5 } }, routing);
    recordToolStart(db, { callId: 'b', name: 'read', args: { path: 'src/app.ts' } }, routing);
    recordToolEnd(db, 'a', true);
    const [a, b] = recentToolActivity(db);
    expect(a).toMatchObject({
      callId: 'a',
      name: 'bash',
      preview: 'ls -la',
      status: 'ok',
      routing: { channel_type: 'http', platform_id: 'c1', thread_id: null },
    });
    expect(a!.endedAt).not.toBeNull();
    expect(b).toMatchObject({ callId: 'b', preview: 'src/app.ts', status: 'running', endedAt: null });
    initRunnerState(db, 1, 'pincer');
    expect(recentToolActivity(db)[1]).toMatchObject({ callId: 'b', status: 'error' });
  });

  it.each([
    ['the main argument', { command: 'npm test' }, 'npm test'],
    ['JSON when no usual key', { a: 1, b: [true] }, '{"a":1,"b":[true]}'],
    ['nothing for no arguments', {}, ''],
    ['a string as it is', 'git status', 'git status'],
    ['one line for several', { command: 'echo a\necho b\r\n\techo c' }, 'echo a echo b echo c'],
    ['escape sequences removed', { command: 'echo \x1b[31mred\x1b[0m \x1b]0;title\x07done' }, 'echo red done'],
    ['control and bidi characters as spaces', { path: 'a\u0000b\u202ec\u0085d\u2028e' }, 'a b c d e'],
  ])('previews %s', (_name, args, preview) => {
    expect(previewArgs(args)).toBe(preview);
  });

  it('clamps what it stores: a long preview and name are cut with …, a huge argument is not serialised whole', () => {
    const long = previewArgs({ command: 'x'.repeat(10_000) });
    expect([...long]).toHaveLength(MAX_PREVIEW);
    expect(long.endsWith('…')).toBe(true);
    expect(previewArgs({ big: 'y'.repeat(5_000_000) }).length).toBeLessThanOrEqual(MAX_PREVIEW);
    // a cut never splits a surrogate pair
    expect(cleanText('😀'.repeat(200), 10)).toBe(`${'😀'.repeat(9)}…`);
    const { db } = createTestSession();
    recordToolStart(db, { callId: 'c'.repeat(500), name: `n${'a'.repeat(500)}`, args: null }, null);
    const [row] = recentToolActivity(db);
    expect([...row!.name]).toHaveLength(MAX_NAME);
    expect(row!.callId.length).toBeLessThanOrEqual(100);
  });

  it('keeps the newest 200 rows as calls start', () => {
    const { db } = createTestSession();
    for (let i = 0; i < 250; i++) recordToolStart(db, { callId: `c${i}`, name: 'bash', args: {} }, null);
    expect(db.prepare('SELECT count(*) FROM tool_activity').pluck().get()).toBe(200);
    const read = recentToolActivity(db);
    expect(read).toHaveLength(READ_LIMIT);
    expect(read.at(-1)!.callId).toBe('c249');
  });

  it('reads rows the agent wrote itself defensively: bounded, cleaned, malformed ones left out', () => {
    const { db } = createTestSession();
    const insert = db.prepare(
      `INSERT INTO tool_activity (call_id, name, preview, status, started_at, ended_at, channel_type, platform_id, thread_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const now = new Date().toISOString();
    insert.run('ok', 'bash', 'fine', 'ok', now, now, null, null, null);
    insert.run('huge', `\x1b[2J${'n'.repeat(1_000_000)}`, `\x1b]52;c;${'p'.repeat(2_000_000)}\x07`, 'running', now, null, null, null, null);
    insert.run('status', 'bash', 'x', 'pwned', now, null, null, null, null);
    insert.run('blob', Buffer.from('bash'), 'x', 'ok', now, now, null, null, null);
    insert.run('time', 'bash', 'x', 'ok', 'z'.repeat(10_000), now, null, null, null);
    insert.run('route', 'bash', 'x', 'ok', now, now, 'http', 'p'.repeat(10_000), null);
    insert.run('int', 42, 7, 'ok', now, now, null, null, null);
    const read = recentToolActivity(db);
    // the blob and the numbers are read as text (CAST); a bad status, an overlong time or routing value are dropped
    expect(read.map((r) => r.callId)).toEqual(['ok', 'huge', 'blob', 'int']);
    const huge = read[1]!;
    expect(huge.name).not.toContain('\x1b');
    expect([...huge.name]).toHaveLength(MAX_NAME);
    // an escape sequence cut short (its end past what is read) is dropped to the end, never printed
    expect(huge.preview).toBe('');
    expect(read[3]).toMatchObject({ name: expect.stringMatching(/^42/), preview: expect.stringMatching(/^7/) });
  });
});

describe('the pipeline stage that shows tool activity', () => {
  const session = { id: 's1', channelType: 'http', platformId: 'own', threadKey: '' };
  const handle = { session } as unknown as SessionHandle;
  function tool(
    id: number,
    status: ToolActivity['status'],
    platformId: string | null = 'own',
    startedAt = new Date(Date.now() + 1000).toISOString(),
  ): ToolActivity {
    return {
      id,
      callId: `c${id}`,
      name: 'bash',
      preview: `p${id}`,
      status,
      startedAt,
      endedAt: status === 'running' ? null : startedAt,
      routing: { channel_type: platformId ? 'http' : null, platform_id: platformId, thread_id: null },
    };
  }
  function channel(): { adapter: ChannelAdapter; shown: { conversation: ConversationRef; id: number; status: string }[] } {
    const shown: { conversation: ConversationRef; id: number; status: string }[] = [];
    const adapter = {
      type: 'http',
      showToolActivity: async (conversation: ConversationRef, activity: ToolActivity) =>
        void shown.push({ conversation, id: activity.id, status: activity.status }),
    } as unknown as ChannelAdapter;
    return { adapter, shown };
  }
  const state = (tools: ToolActivity[], runner: SessionState['runner'] = null): SessionState => ({ ...idleSessionState(), tools, runner });

  it('shows each change once; of the calls before it began, only those still running', async () => {
    const { adapter, shown } = channel();
    const stage = new ToolActivityStage(new Map([['http', adapter]]));
    const before = new Date(Date.now() - 60_000).toISOString();
    // a session process of an older version says nothing: nothing shown
    await stage.update(handle, { ...idleSessionState() });
    await stage.update(handle, state([tool(1, 'ok', 'own', before), tool(2, 'running', 'own', before)]));
    expect(shown.map((s) => [s.id, s.status])).toEqual([[2, 'running']]);
    await stage.update(handle, state([tool(1, 'ok', 'own', before), tool(2, 'running', 'own', before)]));
    expect(shown).toHaveLength(1);
    await stage.update(handle, state([tool(1, 'ok', 'own', before), tool(2, 'error', 'own', before), tool(3, 'running'), tool(4, 'ok')]));
    expect(shown.map((s) => [s.id, s.status])).toEqual([
      [2, 'running'],
      [2, 'error'],
      [3, 'running'],
      // started and ended between two looks: shown starting first
      [4, 'running'],
      [4, 'ok'],
    ]);
    // a session process of an older version says nothing: nothing shown, nothing forgotten
    await stage.update(handle, { ...idleSessionState() });
    expect(shown).toHaveLength(5);
  });

  it("shows a call only in the session's own conversation or the batch's, never in one a row names", async () => {
    const { adapter, shown } = channel();
    const stage = new ToolActivityStage(new Map([['http', adapter]]));
    await stage.update(handle, state([]));
    const runner = {
      pid: 1,
      hostPid: 1,
      provider: 'pincer',
      state: 'busy' as const,
      batchIds: ['m'],
      routing: { channelType: 'http', platformId: 'batch', threadId: null, inReplyTo: null },
      heartbeatAt: '',
      startedAt: '',
      updatedAt: '',
    };
    await stage.update(handle, state([tool(1, 'running', 'batch'), tool(2, 'running', 'someone-else'), tool(3, 'running', null)], runner));
    expect(shown.map((s) => [s.id, s.conversation.platformId])).toEqual([
      [1, 'batch'],
      [2, 'own'],
      [3, 'own'],
    ]);
  });
});
