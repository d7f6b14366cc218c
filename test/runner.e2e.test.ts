import type Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { getSessionValue, readRunnerState } from '../src/db/state.js';
import { startRunner, stopAllRunners, type RunnerHandle } from './support/runner-harness.js';
import { recorded, recordFile } from './support/mock-record.js';
import { cleanupSessions, createTestSession, type TestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

/** Write locks a test took on a session DB; released even when the test failed. */
const lockers = new Set<Database.Database>();

afterEach(async () => {
  for (const locker of lockers) locker.close();
  lockers.clear();
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

async function replies(s: TestSession, count: number): Promise<string[]> {
  await waitFor(`${count} replies`, () => s.outbound().length >= count);
  return s.outboundContents().map((c) => String(c.text));
}

describe('pincer runner with the mock provider', () => {
  it('answers a pending chat message, routed back to its sender, and completes it', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root);
    await runner.ready();
    const { id } = s.chat('hello', { platformId: 'chan-1', channelType: 'slack', threadId: 't-9' });
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    const [reply] = s.outbound();
    expect(reply).toMatchObject({ in_reply_to: id, platform_id: 'chan-1', channel_type: 'slack', thread_id: 't-9', kind: 'chat' });
    expect(JSON.parse(reply!.content).text).toMatch(/^echo: <context timezone="UTC"\/>\n<messages>\n<message id="1" sender="alice"/);
    expect(JSON.parse(reply!.content).text).not.toContain('chan-1');
    expect(s.inbound(id)).toMatchObject({ tries: 1, last_error: null });
    expect(await runner.stop()).toBe(0);
  });

  it('messages waiting before start-up are all answered, in one batch', async () => {
    const s = createTestSession();
    const ids = Array.from({ length: 15 }, (_, i) => s.chat(`m${i}`).id);
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    await waitFor('all completed', () => ids.every((id) => s.inbound(id).status === 'completed'));
    expect(recorded(s).filter((r) => r.type === 'query')).toHaveLength(1);
    await runner.stop();
  });

  it('handles a burst of 50 mixed-kind messages, none left behind', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { PINCER_BATCH_MAX_MESSAGES: '20' });
    await runner.ready();
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const kind = i % 3;
      if (kind === 0) ids.push(s.chat(`c${i}`).id);
      if (kind === 1) ids.push(s.insert({ kind: 'task', content: { prompt: `t${i}` } }).id);
      if (kind === 2) ids.push(s.insert({ kind: 'webhook', content: { source: 'gh', event: 'push', payload: { i } } }).id);
    }
    await waitFor('all 50 completed', () => ids.every((id) => s.inbound(id).status === 'completed'), { timeoutMs: 20_000 });
    const text = s
      .outboundContents()
      .map((c) => String(c.text))
      .join('\n');
    for (let i = 0; i < 50; i++) expect(text).toMatch(new RegExp(`\\b[ct]${i}\\b|&quot;i&quot;: ${i}\\b`));
    await runner.stop();
  });

  it('pushes a message that arrives during a query into that query', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_DELAY_MS: '400', MOCK_RECORD_FILE: recordFile(s) });
    await runner.ready();
    const first = s.chat('first');
    await waitFor('query started', () => readRunnerState(s.db)?.state === 'busy');
    const second = s.chat('second');
    await waitFor('both completed', () => [first.id, second.id].every((id) => s.inbound(id).status === 'completed'));
    const log = recorded(s);
    expect(log.map((r) => r.type)).toEqual(['query', 'push']);
    expect(log[1]!.prompt).toContain('second</message>');
    const out = s.outbound();
    expect(out.map((r) => r.in_reply_to)).toEqual([first.id, second.id]);
    await runner.stop();
  });

  it('shows the batch in flight and its routing in runner_state, beats while busy, and writes nothing while idle', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_DELAY_MS: '1500', PINCER_HEARTBEAT_MS: '50' });
    await runner.ready();
    const { id } = s.chat('x', { platformId: 'p1', channelType: 'http', threadId: 'th' });
    const busy = await waitFor('busy', () => {
      const state = readRunnerState(s.db);
      return state?.state === 'busy' && state;
    });
    // while the turn runs the heartbeat is written on a timer, not only on events
    await waitFor('heartbeat advances during the turn', () => {
      const state = readRunnerState(s.db)!;
      return state.state === 'busy' && state.heartbeatAt > busy.heartbeatAt;
    });
    expect(busy.batchIds).toEqual([id]);
    expect(busy.routing).toEqual({ platformId: 'p1', channelType: 'http', threadId: 'th', inReplyTo: id });
    expect(busy.provider).toBe('mock');
    expect(busy.pid).toBe(runner.child.pid);
    await waitFor('idle again', () => readRunnerState(s.db)?.state === 'idle');
    expect(readRunnerState(s.db)).toMatchObject({ batchIds: [], routing: null });
    // an idle runner writes nothing (idle costs nothing): many heartbeat intervals later its row is as it was
    const idle = readRunnerState(s.db)!;
    const since = Date.now();
    await waitFor('ten heartbeat intervals', () => Date.now() > since + 500, { intervalMs: 20 });
    expect(readRunnerState(s.db)).toEqual(idle);
    await runner.stop();
  });

  it('context-only rows never wake the agent but ride along with the next message', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s), PINCER_POLL_IDLE_MS: '20' });
    await runner.ready();
    const ctx = s.chat('just context', { trigger: 0 });
    // give the runner many fallback polls (20 ms each) to wrongly pick it up
    await waitFor('several polls', () => Date.now() > Date.parse(s.inbound(ctx.id).timestamp) + 300, { intervalMs: 20 });
    expect(s.inbound(ctx.id).status).toBe('pending');
    expect(recorded(s)).toHaveLength(0);
    const trig = s.chat('now answer');
    await waitFor('both completed', () => [ctx.id, trig.id].every((id) => s.inbound(id).status === 'completed'));
    expect(recorded(s)[0]!.prompt).toMatch(/just context[\s\S]*now answer/);
    expect(s.outbound()[0]!.in_reply_to).toBe(trig.id);
    await runner.stop();
  });

  it('picks up a scheduled message when it falls due', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root);
    await runner.ready();
    const dueAt = new Date(Date.now() + 700).toISOString();
    const { id } = s.insert({ kind: 'task', content: { prompt: 'scheduled job' }, processAfter: dueAt });
    await waitFor('completed', () => s.inbound(id).status === 'completed');
    expect(Date.parse(s.inbound(id).status_changed!)).toBeGreaterThanOrEqual(Date.parse(dueAt));
    expect((await replies(s, 1))[0]).toContain('[SCHEDULED TASK]');
    await runner.stop();
  });

  it('fails unprocessable rows with the reason and answers the rest of the batch', async () => {
    const s = createTestSession();
    const bad = s.insert({ kind: 'chat', content: '{not json' });
    const unknown = s.insert({ kind: 'fax', content: { text: 'x' } });
    const missing = s.insert({ kind: 'task', content: { script: 'x' } });
    const good = s.chat('still answered');
    const runner = startRunner(s.paths.root);
    await waitFor('good completed', () => s.inbound(good.id).status === 'completed');
    expect(s.inbound(bad.id)).toMatchObject({ status: 'failed' });
    expect(s.inbound(bad.id).last_error).toMatch(/not valid JSON/);
    expect(s.inbound(unknown.id).last_error).toMatch(/unknown kind "fax"/);
    expect(s.inbound(missing.id).last_error).toMatch(/invalid task content: prompt/);
    expect(runner.stderr()).toMatch(/message 2 \(.*\) failed: unknown kind "fax"/);
    expect((await replies(s, 1))[0]).toContain('still answered');
    await runner.stop();
  });

  it.each([
    ['an error event', 'please mock:error', /mock error: mock error \(requested by the prompt\)/],
    ['a crashed provider', 'please mock:crash', /provider crashed: mock provider crashed/],
  ])('on %s records last_error, leaves the batch processing and goes on', async (_name, text, error) => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root);
    await runner.ready();
    const failing = s.chat(text);
    await waitFor('error recorded', () => s.inbound(failing.id).last_error);
    expect(s.inbound(failing.id)).toMatchObject({ status: 'processing', tries: 1 });
    expect(s.inbound(failing.id).last_error).toMatch(error);
    await waitFor('batch cleared', () => readRunnerState(s.db)?.state === 'idle');
    expect(readRunnerState(s.db)!.batchIds).toEqual([]);
    const next = s.chat('next one');
    await waitFor('runner goes on', () => s.inbound(next.id).status === 'completed');
    expect(s.outbound()).toHaveLength(1);
    await runner.stop();
  });

  it('stores the provider session and passes it back on the next query and after a restart', async () => {
    const s = createTestSession();
    let runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const a = s.chat('one');
    await waitFor('first done', () => s.inbound(a.id).status === 'completed');
    const sessionId = (s.db.prepare(`SELECT value FROM session_state WHERE key = 'mock:session_id'`).get() as { value: string }).value;
    expect(sessionId).toMatch(/^mock-/);
    const b = s.chat('two');
    await waitFor('second done', () => s.inbound(b.id).status === 'completed');
    expect(await runner.stop()).toBe(0);
    runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const c = s.chat('three');
    await waitFor('third done', () => s.inbound(c.id).status === 'completed');
    const queries = recorded(s).filter((r) => r.type === 'query');
    expect(queries.map((q) => q.sessionId)).toEqual([undefined, sessionId, sessionId]);
    expect(queries[2]!.resumeAt).toBe('mock-turn-1');
    await runner.stop();
  });

  it('/clear forgets the session and answers "Session cleared."', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const a = s.chat('before');
    await waitFor('done', () => s.inbound(a.id).status === 'completed');
    const clear = s.chat('/clear');
    await waitFor('cleared', () => s.inbound(clear.id).status === 'completed');
    expect(s.outboundContents()[1]).toEqual({ text: 'Session cleared.' });
    expect(s.outbound()[1]!.in_reply_to).toBe(clear.id);
    const b = s.chat('after');
    await waitFor('done', () => s.inbound(b.id).status === 'completed');
    const queries = recorded(s).filter((r) => r.type === 'query');
    expect(queries).toHaveLength(2);
    expect(queries[1]!.sessionId).toBeUndefined();
    await runner.stop();
  });

  it('passes provider-native slash commands through raw, and other slash text as a message', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const native = s.chat('/compact keep the plan');
    await waitFor('native done', () => s.inbound(native.id).status === 'completed');
    const other = s.chat('/weather tomorrow');
    await waitFor('other done', () => s.inbound(other.id).status === 'completed');
    const prompts = recorded(s).map((r) => r.prompt);
    expect(prompts[0]).toBe('/compact keep the plan');
    expect(prompts[1]).toContain('/weather tomorrow</message>');
    await runner.stop();
  });

  it('gives the provider the system prompt from global/ and agent/ CLAUDE.md and the extra directories', async () => {
    const s = createTestSession();
    fs.writeFileSync(path.join(s.paths.global, 'CLAUDE.md'), 'Global rules.');
    fs.writeFileSync(path.join(s.paths.agent, 'CLAUDE.md'), 'Agent rules.');
    fs.mkdirSync(path.join(s.paths.extra, 'docs'));
    fs.writeFileSync(path.join(s.paths.extra, 'not-a-dir.txt'), 'x');
    const runner = startRunner(s.paths.root, { MOCK_RECORD_FILE: recordFile(s) });
    const a = s.chat('hi');
    await waitFor('done', () => s.inbound(a.id).status === 'completed');
    const [query] = recorded(s);
    expect(query!.systemPrompt).toMatch(/^Global rules\.\n\nAgent rules\./);
    expect(query!.additionalDirectories).toEqual([path.join(s.paths.extra, 'docs')]);
    await runner.stop();
  });

  it('on SIGTERM lets the active query finish, sets state stopping and exits 0', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_DELAY_MS: '300' });
    await runner.ready();
    const { id } = s.chat('in flight');
    await waitFor('busy', () => readRunnerState(s.db)?.state === 'busy');
    expect(await runner.stop()).toBe(0);
    expect(s.inbound(id).status).toBe('completed');
    expect(readRunnerState(s.db)).toMatchObject({ state: 'stopping', batchIds: [] });
  });

  it('on SIGTERM aborts a query that outlasts the grace period, leaving its rows for retry', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_DELAY_MS: '60000', PINCER_STOP_GRACE_MS: '200' });
    await runner.ready();
    const { id } = s.chat('slow');
    await waitFor('busy', () => readRunnerState(s.db)?.state === 'busy');
    expect(await runner.stop()).toBe(0);
    expect(s.inbound(id)).toMatchObject({ status: 'processing', last_error: 'runner stopped before the answer was complete' });
    expect(readRunnerState(s.db)).toMatchObject({ state: 'stopping', batchIds: [] });
  });

  describe("another process holding the database past the runner's busy timeout", () => {
    /** The runner waits 5 s for a lock before SQLite says "database is locked"; the locker holds it longer. */
    const LOCKED_ENV = { PINCER_BUSY_TIMEOUT_MS: '5000', PINCER_POLL_IDLE_MS: '200' };

    /** A write lock from a connection of our own (as the host, a backup or a sqlite3 shell would hold it). */
    function lockDb(s: TestSession): { release(): void } {
      const locker = openSessionDb(s.paths.db);
      locker.exec('BEGIN IMMEDIATE');
      lockers.add(locker);
      return {
        release: () => {
          locker.exec('COMMIT');
          locker.close();
          lockers.delete(locker);
        },
      };
    }

    /** The runner logged that its `what` write met the lock and will be tried again (it did not give up or crash). */
    const waitedOut = (runner: RunnerHandle, what: string): Promise<boolean> =>
      waitFor(
        `the runner waiting out the lock on its ${what}`,
        () => runner.stderr().includes(`warn: ${what}: database is locked (1 in a row), trying again`),
        {
          timeoutMs: 30_000,
          intervalMs: 50,
        },
      );

    async function answeredOnceAfterTheLock(s: TestSession, runner: RunnerHandle, id: string): Promise<void> {
      await waitFor('answered after the lock', () => s.inbound(id).status === 'completed', { timeoutMs: 20_000 });
      expect(s.outbound().filter((row) => row.in_reply_to === id)).toHaveLength(1);
      expect(s.inbound(id)).toMatchObject({ tries: 1, last_error: null });
      expect(runner.child.exitCode).toBeNull();
      expect(await runner.stop()).toBe(0);
      expect(runner.stderr()).not.toContain('crashed');
    }

    it('at start-up: the runner waits, then starts and answers what was waiting', async () => {
      const s = createTestSession();
      const { id } = s.chat('waiting behind a lock');
      const lock = lockDb(s);
      const runner = startRunner(s.paths.root, LOCKED_ENV);
      await waitedOut(runner, 'runner state');
      lock.release();
      await runner.ready();
      await answeredOnceAfterTheLock(s, runner, id);
    }, 60_000);

    it('while claiming: the message is claimed once the lock is gone', async () => {
      const s = createTestSession();
      const runner = startRunner(s.paths.root, LOCKED_ENV);
      await runner.ready();
      await waitFor('runner idle', () => readRunnerState(s.db)?.state === 'idle');
      // the lock is taken right after the insert, long before the message falls due and the runner claims it
      const { id } = s.chat('behind a lock', { processAfter: new Date(Date.now() + 1500).toISOString() });
      const lock = lockDb(s);
      await waitedOut(runner, 'claim');
      lock.release();
      await answeredOnceAfterTheLock(s, runner, id);
    }, 60_000);

    it('while writing the answer: the answer is written once the lock is gone, not lost and not asked twice', async () => {
      const s = createTestSession();
      const runner = startRunner(s.paths.root, { ...LOCKED_ENV, MOCK_DELAY_MS: '3000' });
      await runner.ready();
      const { id } = s.chat('answered behind a lock');
      // the query has started (its session id is recorded) and answers 3 s later, into the lock
      await waitFor('query started', () => getSessionValue(s.db, 'mock:session_id'));
      const lock = lockDb(s);
      await waitedOut(runner, 'answer');
      lock.release();
      await answeredOnceAfterTheLock(s, runner, id);
    }, 60_000);
  });

  it('runner killed with SIGKILL mid-batch loses nothing: rows are still there on restart', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { MOCK_DELAY_MS: '60000' });
    await runner.ready();
    const ids = [s.chat('a').id, s.chat('b').id];
    // both in the batch in flight (b may come as a follow-up pushed into the query)
    await waitFor('both in flight', () => ids.every((id) => readRunnerState(s.db)?.batchIds.includes(id)));
    const late = s.chat('arrives during the batch').id;
    await runner.kill('SIGKILL');
    const statuses = [...ids, late].map((id) => s.inbound(id).status);
    expect(statuses.every((st) => st === 'processing' || st === 'pending')).toBe(true);
    const restarted = startRunner(s.paths.root);
    await restarted.ready();
    expect(readRunnerState(s.db)!.pid).toBe(restarted.child.pid);
    // The new runner does not claim the dead runner's batch (the host's sweep retries it) but takes new work.
    await waitFor('late message answered', () => s.inbound(late).status === 'completed');
    expect(ids.map((id) => s.inbound(id).status)).toEqual(['processing', 'processing']);
    expect(readRunnerState(s.db)!.batchIds).not.toContain(ids[0]);
    expect(s.allInbound()).toHaveLength(3);
    await restarted.stop();
  });
});
