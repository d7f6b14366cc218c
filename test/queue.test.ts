import { afterEach, describe, expect, it } from 'vitest';
import { detectCommand } from '../src/runner/commands.js';
import { InboundQueue } from '../src/runner/queue.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';

afterEach(() => cleanupSessions());

function queueFor(session: TestSession, caps = { maxMessages: 50, maxBytes: 512 * 1024 }): InboundQueue {
  return new InboundQueue(session.db, caps, (m) => detectCommand(m, ['/compact']) !== null);
}

const past = '2020-01-01T00:00:00.000Z';
const future = '2999-01-01T00:00:00.000Z';

describe('InboundQueue.claim', () => {
  it('claims due pending rows oldest first and marks them processing with tries + 1', () => {
    const s = createTestSession();
    const a = s.chat('a');
    const b = s.chat('b', { processAfter: past });
    s.chat('later', { processAfter: future });
    const claim = queueFor(s).claim('start');
    expect(claim.messages.map((m) => m.row.id)).toEqual([a.id, b.id]);
    for (const id of [a.id, b.id]) expect(s.inbound(id)).toMatchObject({ status: 'processing', tries: 1 });
    expect(s.inbound(a.id).status_changed).not.toBeNull();
    expect(queueFor(s).claim('start').messages).toHaveLength(0);
  });

  it('reads process_after written with an offset as the instant it names', () => {
    const s = createTestSession();
    const soon = new Date(Date.now() - 60_000);
    const offset = soon.toISOString().replace('Z', '+00:00');
    const { id } = s.chat('x', { processAfter: offset });
    expect(
      queueFor(s)
        .claim('start')
        .messages.map((m) => m.row.id),
    ).toEqual([id]);
  });

  it('does not wake for context-only rows, and takes them along with the next trigger', () => {
    const s = createTestSession();
    const ctx = s.chat('context', { trigger: 0 });
    expect(queueFor(s).claim('start').messages).toHaveLength(0);
    expect(s.inbound(ctx.id).status).toBe('pending');
    const trig = s.chat('now answer');
    expect(
      queueFor(s)
        .claim('start')
        .messages.map((m) => m.row.id),
    ).toEqual([ctx.id, trig.id]);
  });

  it('caps a batch by count and by bytes; the rest waits for the next batch', () => {
    const s = createTestSession();
    for (let i = 0; i < 7; i++) s.chat(`m${i}`);
    const q = queueFor(s, { maxMessages: 3, maxBytes: 1 << 20 });
    expect(q.claim('start').messages).toHaveLength(3);
    expect(q.claim('start').messages).toHaveLength(3);
    expect(q.claim('start').messages).toHaveLength(1);

    const t = createTestSession();
    for (let i = 0; i < 4; i++) t.chat('x'.repeat(1000));
    const bytes = queueFor(t, { maxMessages: 50, maxBytes: 2500 });
    expect(bytes.claim('start').messages).toHaveLength(2);
    // a single row larger than the cap still goes alone rather than blocking the queue
    const u = createTestSession();
    u.chat('y'.repeat(5000));
    expect(queueFor(u, { maxMessages: 50, maxBytes: 100 }).claim('start').messages).toHaveLength(1);
  });

  it('handles a burst of 50 mixed-kind messages in full, none left behind', () => {
    const s = createTestSession();
    const kinds = [
      () => s.chat('c'),
      () => s.insert({ kind: 'task', content: { prompt: 't' } }),
      () => s.insert({ kind: 'webhook', content: { source: 'gh', event: 'push', payload: {} } }),
      () => s.insert({ kind: 'system', content: { action: 'x', status: 'success' } }),
      () => s.chat('ctx', { trigger: 0 }),
    ];
    for (let i = 0; i < 50; i++) kinds[i % kinds.length]!();
    const q = queueFor(s, { maxMessages: 20, maxBytes: 1 << 20 });
    let claimed = 0;
    for (let i = 0; i < 5; i++) claimed += q.claim('start').messages.length;
    expect(claimed).toBe(50);
    expect(s.allInbound().filter((r) => r.status === 'pending')).toHaveLength(0);
  });

  it('fails rows it can never process, with the reason, and claims the rest', () => {
    const s = createTestSession();
    const bad = s.insert({ kind: 'chat', content: '{"text": broken' });
    const missing = s.insert({ kind: 'chat', content: { text: 'no sender' } });
    const unknown = s.insert({ kind: 'email', content: { text: 'x' } });
    const good = s.chat('fine');
    const claim = queueFor(s).claim('start');
    expect(claim.messages.map((m) => m.row.id)).toEqual([good.id]);
    expect(claim.failed.map((f) => f.row.id)).toEqual([bad.id, missing.id, unknown.id]);
    expect(s.inbound(bad.id)).toMatchObject({ status: 'failed' });
    expect(s.inbound(bad.id).last_error).toMatch(/not valid JSON/);
    expect(s.inbound(missing.id).last_error).toMatch(/sender/);
    expect(s.inbound(unknown.id).last_error).toMatch(/unknown kind "email"/);
  });

  it('leaves question answers to the MCP server', () => {
    const s = createTestSession();
    const answer = s.insert({ kind: 'system', content: { type: 'question_response', questionId: 'q1', selectedOption: 'yes' } });
    s.chat('hi');
    const claim = queueFor(s).claim('start');
    expect(claim.messages.map((m) => m.message.kind)).toEqual(['chat']);
    expect(s.inbound(answer.id).status).toBe('pending');
  });

  it('claims a command alone and in order; a push stops before it', () => {
    const s = createTestSession();
    const before = s.chat('before');
    const clear = s.chat('/clear');
    const after = s.chat('after');
    const q = queueFor(s);
    expect(q.claim('push').messages.map((m) => m.row.id)).toEqual([before.id]);
    expect(q.claim('push').messages).toHaveLength(0);
    const cmd = q.claim('start');
    expect(cmd.command?.row.id).toBe(clear.id);
    expect(cmd.messages).toHaveLength(0);
    expect(s.inbound(after.id).status).toBe('pending');
    expect(q.claim('start').messages.map((m) => m.row.id)).toEqual([after.id]);
  });

  it('tells how long until the next scheduled row is due', () => {
    const s = createTestSession();
    expect(queueFor(s).msUntilNextDue()).toBeUndefined();
    s.chat('x', { processAfter: new Date(Date.now() + 60_000).toISOString() });
    const ms = queueFor(s).msUntilNextDue()!;
    expect(ms).toBeGreaterThan(50_000);
    expect(ms).toBeLessThanOrEqual(60_000);
  });
});

describe('detectCommand', () => {
  it.each([
    ['/clear', 'runner'],
    ['  /CLEAR  ', 'runner'],
    ['/compact now', 'native'],
    ['/unknown', null],
    ['not /clear', null],
  ])('%s → %s', (text, expected) => {
    const s = createTestSession();
    s.chat(text);
    const row = s.allInbound()[0]!;
    const message = { row, message: { kind: 'chat' as const, content: { text, sender: 'a' } } };
    expect(detectCommand(message, ['/compact'])?.type ?? null).toBe(expected);
  });
});
