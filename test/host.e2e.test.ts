import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import type { InboundRow } from '../src/db/types.js';
import { PID_SIGNALLED_RUNNER, startHost, stopAllHosts, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';
import { isAlive } from './support/processes.js';

/** The real `pincer host --http 0` with real runner processes (mock provider), driven over HTTP. */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

function inboundRows(host: HostHandle, sessionId: string): InboundRow[] {
  const db = openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'), { readonly: true });
  try {
    return db.prepare('SELECT * FROM messages_in ORDER BY seq').all() as InboundRow[];
  } finally {
    db.close();
  }
}

async function post(host: HostHandle, conversation: string, body: Record<string, unknown>): Promise<{ sessionId: string; id: string; seq: number }> {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, body);
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string; seq: number };
}

describe('pincer host over HTTP', () => {
  it('answers a posted message on the SSE stream and marks the row delivered', async () => {
    const host = await startHost();
    const stream = host.stream('alice');
    const sent = await post(host, 'alice', { text: 'hello host', sender: 'Alice', senderId: 'u1' });
    const reply = await stream.waitFor('the reply', (e) => e.event === 'chat');
    expect(reply.data.text).toContain('hello host</message>');
    expect(reply.data.sessionId).toBe(sent.sessionId);
    // The answer is written (and streamed) before the query ends and the runner marks the row completed.
    await waitFor('completed', () => inboundRows(host, sent.sessionId)[0]?.status === 'completed');
    const rows = inboundRows(host, sent.sessionId);
    expect(rows[0]).toMatchObject({ id: sent.id, status: 'completed', channel_type: 'http', platform_id: 'alice' });
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'), { readonly: true });
    const out = db.prepare('SELECT delivered_at, platform_message_id FROM messages_out').get() as { delivered_at: string; platform_message_id: string };
    db.close();
    expect(out.delivered_at).not.toBeNull();
    expect(out.platform_message_id).toBe(`http-${reply.id}`);
    // A client that connects late replays from the mailbox.
    const late = await host.request('GET', '/v1/conversations/alice/events?after=0');
    expect((late.body.events as unknown[]).length).toBe(1);
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('refuses bad requests: no token 401, malformed body 400 naming the field, unknown route 404', async () => {
    const host = await startHost();
    expect((await host.request('POST', '/v1/conversations/a/messages', { text: 'x' }, { token: null })).status).toBe(401);
    expect((await host.request('POST', '/v1/conversations/a/messages', { text: 'x' }, { token: 'wrong-token-wrong-token' })).status).toBe(401);
    const noText = await host.request('POST', '/v1/conversations/a/messages', { sender: 'x' });
    expect(noText.status).toBe(400);
    expect(noText.body.field).toBe('text');
    expect(noText.body.error).toMatch(/text/);
    const badJson = await host.request('POST', '/v1/conversations/a/messages', undefined, { raw: '{"text": ' });
    expect(badJson.status).toBe(400);
    expect(badJson.body.error).toMatch(/invalid JSON/);
    const badId = await host.request('POST', '/v1/conversations/a%20b/messages', { text: 'x' });
    expect(badId.status).toBe(400);
    expect(badId.body.field).toBe('conversation');
    expect((await host.request('GET', '/v1/nothing')).status).toBe(404);
    expect((await host.request('GET', '/v1/health', undefined, { token: null })).status).toBe(200);
    expect(await host.stop()).toBe(0);
  });

  it('refuses a second host on the same home, so a session never gets two runners', async () => {
    const host = await startHost();
    const { spawnSync } = await import('node:child_process');
    const { BUILT_CLI } = await import('./support/runner-harness.js');
    const second = spawnSync(process.execPath, [BUILT_CLI, 'host'], {
      env: { PATH: process.env.PATH, PINCER_HOME: host.home },
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(second.status).toBe(2);
    expect(second.stderr).toContain(`another host (pid ${host.child.pid}) is using ${host.home}`);
    expect(await host.stop()).toBe(0);
    expect(fs.existsSync(path.join(host.home, 'host.lock'))).toBe(false);
  });

  it('refuses an unknown conversation when no default group is configured', async () => {
    const host = await startHost({ PINCER_DEFAULT_GROUP: 'none' });
    const res = await host.request('POST', '/v1/conversations/stranger/messages', { text: 'hi' });
    expect(res.status).toBe(404);
    expect(res.body.error).toMatch(/unknown conversation "stranger".*default group/);
    expect(await host.stop()).toBe(0);
  });

  it('maps two conversations to two isolated sessions', async () => {
    const host = await startHost();
    const a = host.stream('conv-a');
    const b = host.stream('conv-b');
    const sa = await post(host, 'conv-a', { text: 'only for A' });
    const sb = await post(host, 'conv-b', { text: 'only for B' });
    expect(sa.sessionId).not.toBe(sb.sessionId);
    const ra = await a.waitFor('reply A', (e) => e.event === 'chat');
    const rb = await b.waitFor('reply B', (e) => e.event === 'chat');
    expect(ra.data.text).toContain('only for A');
    expect(ra.data.text).not.toContain('only for B');
    expect(rb.data.text).toContain('only for B');
    expect(rb.data.text).not.toContain('only for A');
    expect(inboundRows(host, sa.sessionId).map((r) => r.id)).toEqual([sa.id]);
    expect(inboundRows(host, sb.sessionId).map((r) => r.id)).toEqual([sb.id]);
    expect(new Set(host.runnerPids()).size).toBe(2);
    a.close();
    b.close();
    expect(await host.stop()).toBe(0);
  });

  it('per-thread mode gives each thread of a conversation its own session', async () => {
    const host = await startHost({ PINCER_SESSION_MODE: 'per-thread' });
    const stream = host.stream('team');
    const t1 = await post(host, 'team', { text: 'thread one', threadId: 't1' });
    const t2 = await post(host, 'team', { text: 'thread two', threadId: 't2' });
    const t1again = await post(host, 'team', { text: 'thread one again', threadId: 't1' });
    expect(t1.sessionId).not.toBe(t2.sessionId);
    expect(t1again.sessionId).toBe(t1.sessionId);
    const r2 = await stream.waitFor('reply in t2', (e) => e.event === 'chat' && e.data.threadId === 't2');
    expect(r2.data.sessionId).toBe(t2.sessionId);
    expect(r2.data.text).not.toContain('thread one');
    await waitFor('t1 answered twice', () =>
      stream.events
        .filter((e) => e.data.threadId === 't1' && e.event === 'chat')
        .map((e) => String(e.data.text))
        .join()
        .includes('thread one again'),
    );
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('receives a webhook as a webhook message of the conversation', async () => {
    const host = await startHost();
    const stream = host.stream('ci');
    const noEvent = await host.request('POST', '/v1/webhooks/github?conversation=ci', { ref: 'main' });
    expect(noEvent.status).toBe(400);
    expect(noEvent.body.field).toBe('event');
    const res = await host.request('POST', '/v1/webhooks/github?conversation=ci', { ref: 'main' }, { headers: { 'X-GitHub-Event': 'push' } });
    expect(res.status).toBe(202);
    const reply = await stream.waitFor('reply', (e) => e.event === 'chat');
    expect(reply.data.text).toContain('[WEBHOOK: github/push]');
    expect(reply.data.text).toMatch(/&quot;ref&quot;: &quot;main&quot;/);
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('pincer host runner lifecycle and retries', () => {
  it('retries the batch of a SIGKILLed runner and completes it with nothing lost', async () => {
    const host = await startHost({ ...PID_SIGNALLED_RUNNER, MOCK_DELAY_MS: '1500' });
    const stream = host.stream('k');
    const sent = await post(host, 'k', { text: 'survive the kill' });
    // Wait until the runner has the message in flight, then kill it.
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'), { readonly: true });
    const pid = await waitFor('batch in flight', () => {
      const row = db.prepare('SELECT pid, batch_ids FROM runner_state').get() as { pid: number; batch_ids: string } | undefined;
      return row && JSON.parse(row.batch_ids).includes(sent.id) ? row.pid : undefined;
    });
    db.close();
    process.kill(pid, 'SIGKILL');
    const reply = await stream.waitFor('reply after the retry', (e) => e.event === 'chat');
    expect(reply.data.text).toContain('survive the kill');
    const [row] = inboundRows(host, sent.sessionId);
    expect(row).toMatchObject({ status: 'completed', tries: 2 });
    expect(host.runnerPids().length).toBe(2);
    expect(host.stderr()).toMatch(new RegExp(`runner ${pid} for \\S+ exited unexpectedly \\(SIGKILL\\)`));
    expect(stream.events.filter((e) => e.event === 'chat')).toHaveLength(1);
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('kills a runner whose heartbeat stopped (frozen process) and retries its batch', async () => {
    const host = await startHost({ ...PID_SIGNALLED_RUNNER, MOCK_DELAY_MS: '1000', PINCER_HEARTBEAT_MS: '100', PINCER_HEARTBEAT_TIMEOUT_MS: '1500' });
    const stream = host.stream('frozen');
    const sent = await post(host, 'frozen', { text: 'do not freeze' });
    const db = openSessionDb(path.join(host.sessionDir(sent.sessionId), 'session.db'), { readonly: true });
    const pid = await waitFor('batch in flight', () => {
      const row = db.prepare('SELECT pid, batch_ids FROM runner_state').get() as { pid: number; batch_ids: string } | undefined;
      return row && JSON.parse(row.batch_ids).includes(sent.id) ? row.pid : undefined;
    });
    db.close();
    process.kill(pid, 'SIGSTOP');
    await stream
      .waitFor('reply from the next runner', (e) => e.event === 'chat')
      .catch((err: unknown) => {
        throw new Error(`${String(err)}\n${host.stderr()}`);
      });
    expect(host.stderr()).toMatch(new RegExp(`runner ${pid} for \\S+: no heartbeat for \\d+ ms; killing it`));
    expect(inboundRows(host, sent.sessionId)[0]).toMatchObject({ status: 'completed', tries: 2 });
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('an idle runner writes no heartbeat, and one frozen while idle is killed once a message waits for it', async () => {
    const host = await startHost({
      ...PID_SIGNALLED_RUNNER,
      PINCER_HEARTBEAT_MS: '100',
      PINCER_HEARTBEAT_TIMEOUT_MS: '1500',
      PINCER_IDLE_TIMEOUT_MS: '600000',
    });
    const stream = host.stream('idle-frozen');
    const first = await post(host, 'idle-frozen', { text: 'first' });
    await stream.waitFor('first reply', (e) => e.event === 'chat');
    const db = openSessionDb(path.join(host.sessionDir(first.sessionId), 'session.db'), { readonly: true });
    const state = () => db.prepare('SELECT pid, state, heartbeat_at FROM runner_state').get() as { pid: number; state: string; heartbeat_at: string };
    const idle = await waitFor('idle', () => (state().state === 'idle' ? state() : undefined));
    // idle past the heartbeat timeout: not killed, and nothing written
    const since = Date.now();
    await waitFor('twice the heartbeat timeout', () => Date.now() > since + 3000, { intervalMs: 50 });
    expect(state()).toEqual(idle);
    expect(host.stderr()).not.toMatch(/killing it/);
    process.kill(idle.pid, 'SIGSTOP');
    await post(host, 'idle-frozen', { text: 'are you frozen' });
    await stream.waitFor('reply from the next runner', (e) => e.event === 'chat' && String(e.data.text).includes('are you frozen'), 30_000);
    expect(host.stderr()).toMatch(new RegExp(`runner ${idle.pid} for \\S+: idle with a message due for \\d+ ms; killing it`));
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('a new host stops the runner left by a host that died, so a session never has two', async () => {
    // The orphan's answer takes 8 s and its stop grace is longer, so it is still there when the next host starts.
    const first = await startHost({ ...PID_SIGNALLED_RUNNER, MOCK_DELAY_MS: '8000', PINCER_STOP_GRACE_MS: '15000', PINCER_HEARTBEAT_MS: '100' });
    const sent = await post(first, 'orphan', { text: 'outlive your host' });
    const db = openSessionDb(path.join(first.sessionDir(sent.sessionId), 'session.db'), { readonly: true });
    const orphan = await waitFor('batch in flight', () => {
      const row = db.prepare('SELECT pid, batch_ids FROM runner_state').get() as { pid: number; batch_ids: string } | undefined;
      return row && JSON.parse(row.batch_ids).includes(sent.id) ? row.pid : undefined;
    });
    db.close();
    first.child.kill('SIGKILL');
    await first.exited;
    const second = await startHost({ ...PID_SIGNALLED_RUNNER, MOCK_DELAY_MS: '0' }, first.home);
    // Stopped by the new host, or (its stdin closed with the old host) already stopping by itself and waited for.
    expect(second.stderr()).toMatch(
      new RegExp(
        `(stopping runner ${orphan} of ${sent.sessionId} left by an earlier host|waiting for runner ${orphan} of ${sent.sessionId}, left by an earlier host, to stop)`,
      ),
    );
    await waitFor('the orphan gone', () => !isAlive(orphan));
    const stream = second.stream('orphan', { lastEventId: '0' }); // the answer may come before the stream opens
    await stream.waitFor('the answer', (e) => e.event === 'chat' && String(e.data.text).includes('outlive your host'));
    expect(inboundRows(second, sent.sessionId)[0]!.status).toBe('completed');
    // Answered once: while the orphan still held the message, the new host's sweep left it alone (it did not put it
    // back to pending for the next runner to answer again). A later message's answer shows the next runner has run.
    await post(second, 'orphan', { text: 'and then' });
    await stream.waitFor('the next answer', (e) => e.event === 'chat' && String(e.data.text).includes('and then'));
    expect(stream.events.filter((e) => e.event === 'chat' && String(e.data.text).includes('outlive your host'))).toHaveLength(1);
    stream.close();
    expect(await second.stop()).toBe(0);
  });

  it("never signals a process a forged runner_state row names (the session DB is the agent's to write)", async () => {
    const first = await startHost();
    const sent = await post(first, 'forged', { text: 'hello' });
    const stream = first.stream('forged', { lastEventId: '0' });
    await stream.waitFor('the answer', (e) => e.event === 'chat');
    stream.close();
    expect(await first.stop()).toBe(0);
    // An innocent process of the host's user, and a row claiming it is this session's live runner.
    const innocent = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      const db = openSessionDb(path.join(first.sessionDir(sent.sessionId), 'session.db'));
      db.prepare("UPDATE runner_state SET pid = ?, state = 'busy', heartbeat_at = ?").run(innocent.pid, new Date().toISOString());
      expect(db.prepare('SELECT changes() AS n').get()).toEqual({ n: 1 });
      db.close();
      const second = await startHost({}, first.home);
      await waitFor('the host started (runners left behind are dealt with before)', () => /\[host\] ready:/.test(second.stderr()));
      expect(second.stderr()).not.toMatch(new RegExp(`runner ${innocent.pid} of`));
      expect(isAlive(innocent.pid!)).toBe(true);
      expect(await second.stop()).toBe(0);
    } finally {
      innocent.kill('SIGKILL');
    }
  });

  it('marks a message failed after five tries and tells the chat', async () => {
    const host = await startHost();
    const stream = host.stream('f');
    const sent = await post(host, 'f', { text: 'please mock:error' });
    // The first failed try is told at once, with the retry to come; then only the final failure.
    const first = await stream.waitFor('the first-try notice', (e) => e.event === 'notice', 25_000);
    expect(first.data.text).toMatch(/^the agent failed: mock error: mock error \(requested by the prompt\); retrying in \d+ s \(try 1 of 5\)$/);
    const notice = await stream.waitFor('the failure notice', (e) => e.event === 'notice' && String(e.data.text).includes('could not be processed'), 25_000);
    expect(notice.data.text).toMatch(/could not be processed.*failed after 5 tries.*mock error/);
    expect(stream.events.filter((e) => e.event === 'notice')).toHaveLength(2);
    const [row] = inboundRows(host, sent.sessionId);
    expect(row).toMatchObject({ status: 'failed', tries: 5 });
    expect(row!.last_error).toMatch(/failed after 5 tries/);
    expect(stream.events.filter((e) => e.event === 'chat')).toHaveLength(0);
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('gives up at once a message whose error another try cannot fix, and tells the chat why', async () => {
    const host = await startHost();
    const stream = host.stream('fatal');
    const sent = await post(host, 'fatal', { text: 'please mock:fatal' });
    const notice = await stream.waitFor('the failure notice', (e) => e.event === 'notice', 25_000);
    expect(notice.data.text).toBe(
      'Your message could not be processed and was given up (mock error: mock error that another try cannot fix (requested by the prompt); not retried, as another try cannot fix it).',
    );
    const [row] = inboundRows(host, sent.sessionId);
    expect(row).toMatchObject({ status: 'failed', tries: 1 });
    // the next message is answered by the same runner
    await post(host, 'fatal', { text: 'and now?' });
    const reply = await stream.waitFor('the reply', (e) => e.event === 'chat', 25_000);
    expect(String(reply.data.text)).toContain('and now?');
    expect(stream.events.filter((e) => e.event === 'notice')).toHaveLength(1);
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('stops an idle runner and starts a new one for the next message', async () => {
    const host = await startHost({ PINCER_IDLE_TIMEOUT_MS: '300' });
    const stream = host.stream('idle');
    await post(host, 'idle', { text: 'first' });
    await stream.waitFor('first reply', (e) => e.event === 'chat');
    await waitFor('idle runner stopped', () => /idle for \d+ ms; stopping it/.test(host.stderr()) && /runner \d+ for \S+ stopped \(0\)/.test(host.stderr()));
    const sessions = await host.request('GET', '/v1/sessions');
    const [session] = sessions.body.sessions as { id: string; runner: unknown }[];
    expect(session!.runner).toBeNull();
    // The provider session is kept for the next runner, published in its config.json.
    await waitFor('provider session saved', () => {
      const config = JSON.parse(fs.readFileSync(path.join(host.sessionDir(session!.id), 'config.json'), 'utf8')) as { sessionId?: string };
      return config.sessionId?.startsWith('mock-');
    });
    await post(host, 'idle', { text: 'second' });
    const second = await stream.waitFor('second reply', (e) => e.event === 'chat' && String(e.data.text).includes('second'));
    expect(second.data.text).not.toContain('first');
    const pids = host.runnerPids();
    expect(pids).toHaveLength(2);
    expect(pids[0]).not.toBe(pids[1]);
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('never stops a busy runner for idleness', async () => {
    const host = await startHost({ PINCER_IDLE_TIMEOUT_MS: '700', MOCK_DELAY_MS: '2500' });
    const stream = host.stream('busy');
    await post(host, 'busy', { text: 'take your time' });
    const reply = await stream.waitFor('the slow reply', (e) => e.event === 'chat');
    expect(reply.data.text).toContain('take your time');
    // busy for 2.5 s with a 0.7 s idle timeout, and not stopped meanwhile
    expect(host.stderr()).not.toMatch(/stopping it/);
    // meanwhile the conversation was shown that the agent is working
    const typing = stream.events.findIndex((e) => e.event === 'typing' && e.data.active === true);
    expect(typing).toBeGreaterThanOrEqual(0);
    expect(typing).toBeLessThan(stream.events.indexOf(reply));
    await stream.waitFor('typing cleared', (e) => e.event === 'typing' && e.data.active === false);
    expect(host.runnerPids()).toHaveLength(1);
    expect(host.stderr()).not.toMatch(/runner \d+ for \S+ exited unexpectedly/);
    // Once idle, it is stopped after all: the stop came from idleness, not from the query's length.
    await waitFor('stopped once idle', () => /idle for \d+ ms; stopping it/.test(host.stderr()));
    stream.close();
    expect(await host.stop()).toBe(0);
  });

  it('backs off a runner that crashes on start and reports it in the chat', async () => {
    // (an unknown provider never gets this far: its group has no model runtime, so no runner starts; generations.e2e)
    const host = await startHost({ PINCER_BATCH_MAX_MESSAGES: 'many' });
    const stream = host.stream('crash');
    await post(host, 'crash', { text: 'anyone there?' });
    const notice = await stream.waitFor('crash notice', (e) => e.event === 'notice');
    expect(notice.data.text).toMatch(/could not be started \(3 failures in a row, last exit 2: .*PINCER_BATCH_MAX_MESSAGES/);
    const delays = [...host.stderr().matchAll(/next start in (\d+) ms/g)].map((m) => Number(m[1]));
    expect(delays.slice(0, 3)).toEqual([100, 200, 400]);
    expect(await host.stop()).toBe(0);
    stream.close();
  });

  it('runs a recurring task and schedules its next cron time in the same series; refuses a bad or too frequent cron', async () => {
    const host = await startHost();
    const bad = await host.request('POST', '/v1/conversations/cron/tasks', { prompt: 'x', recurrence: 'every tuesday' });
    expect(bad.status).toBe(400);
    expect(bad.body.field).toBe('recurrence');
    expect(bad.body.error).toMatch(/recurrence "every tuesday" is not a cron expression of 5 fields/);
    // The same one-minute floor as the agent's schedule_task tool: no 6-field (seconds) schedule.
    const everySecond = await host.request('POST', '/v1/conversations/cron/tasks', { prompt: 'x', recurrence: '* * * * * *' });
    expect(everySecond.status).toBe(400);
    expect(everySecond.body).toMatchObject({ field: 'recurrence', error: expect.stringMatching(/"\* \* \* \* \* \*" is not a cron expression of 5 fields/) });
    const stream = host.stream('cron');
    const res = await host.request('POST', '/v1/conversations/cron/tasks', { prompt: 'tick', recurrence: '* * * * *', processAfter: new Date().toISOString() });
    expect(res.status).toBe(202);
    const { sessionId, id } = res.body as { sessionId: string; id: string };
    const reply = await stream.waitFor('the first occurrence answered', (e) => e.event === 'chat');
    expect(String(reply.data.text)).toContain('[SCHEDULED TASK]');
    // the next occurrence is inserted once the previous one completes: wait for it rather than read at once
    const tasks = await waitFor('the next occurrence', () => {
      const rows = inboundRows(host, sessionId).filter((r) => r.kind === 'task');
      return rows.length >= 2 && rows;
    });
    expect(tasks[0]!.id).toBe(id);
    expect(tasks[1]).toMatchObject({ series_id: id, recurrence: '* * * * *', status: 'pending' });
    expect(new Date(tasks[1]!.process_after!).getUTCSeconds()).toBe(0);
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('pincer chat through the host', () => {
  it('answers piped input and exits', async () => {
    const { spawnSync } = await import('node:child_process');
    const { BUILT_CLI } = await import('./support/runner-harness.js');
    const home = fs.mkdtempSync(path.join((await import('node:os')).tmpdir(), 'pincer-chat-'));
    const result = spawnSync(process.execPath, [BUILT_CLI, 'chat', '--provider', 'mock'], {
      input: 'hello chat\n',
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PINCER_HOME: home, TZ: 'UTC' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^agent> echo: .*hello chat<\/message>/ms);
    expect(fs.readFileSync(path.join(home, 'host.log'), 'utf8')).toMatch(/runner \d+ for \S+ stopped \(0\)/);
    expect(fs.existsSync(path.join(home, 'sessions', 'chat', 'session.db'))).toBe(true);
  });
});
