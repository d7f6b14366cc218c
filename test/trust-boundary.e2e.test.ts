import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSessionDb } from '../src/db/connection.js';
import { insertInbound, insertOutbound } from '../src/db/messages.js';
import type { OutboundRow } from '../src/db/types.js';
import { onPath } from './support/dockerd.js';
import { startHost, stopAllHosts, TEST_TOKEN, type HostHandle } from './support/host-harness.js';
import { waitFor } from './support/wait.js';

/**
 * The session folder belongs to the agent: every file, link and row in it is hostile to the host. Each test here is
 * one attack that worked against an earlier host, played against a real `pincer host` (the test writes into the
 * session folder exactly what an agent's shell could), and shows the refusal is clear and the host keeps serving.
 */
afterEach(async () => {
  expect(await stopAllHosts()).toEqual({ hosts: 0, runners: 0 });
});

/** The sandbox where the attack's files come from inside it (the agent's view); a plain process otherwise. */
const SANDBOX = onPath('bwrap') ? 'bwrap' : 'process';
if (SANDBOX !== 'bwrap') console.warn('[trust] bubblewrap is not installed: the file attacks run with process runners');

/** A fake provider key in the host's environment: it must never come back out of the host. */
const HOST_SECRET = 'sk-ant-host-secret-0123456789';

async function converse(host: HostHandle, conversation: string, body: Record<string, unknown> = { text: 'hi' }) {
  const res = await host.request('POST', `/v1/conversations/${conversation}/messages`, body);
  expect(res.status).toBe(202);
  return res.body as { sessionId: string; id: string; seq: number };
}

function sessionDb(host: HostHandle, sessionId: string) {
  return openSessionDb(path.join(host.sessionDir(sessionId), 'session.db'));
}

const routing = (conversation: string, inReplyTo: string | null) => ({ channelType: 'http', platformId: conversation, threadId: null, inReplyTo });

function outRow(db: ReturnType<typeof openSessionDb>, id: string): OutboundRow {
  return db.prepare('SELECT * FROM messages_out WHERE id = ?').get(id) as OutboundRow;
}

function systemAnswers(db: ReturnType<typeof openSessionDb>, action: string): Record<string, unknown>[] {
  return (db.prepare(`SELECT content FROM messages_in WHERE kind = 'system' ORDER BY seq`).all() as { content: string }[])
    .map((r) => JSON.parse(r.content) as Record<string, unknown>)
    .filter((c) => c.action === action);
}

const mode = (file: string): number => fs.statSync(file).mode & 0o777;

describe('attack 1 and 8: the token file and the modes of the home', () => {
  it.each([
    ['empty', '', /http-token is empty: delete it to have a new token generated/],
    ['short', 'abc123\n', /http-token is too short \(6 characters\)/],
  ])('refuses to start with an %s token file, saying what to do', async (_name, content, message) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-trust-'));
    fs.writeFileSync(path.join(home, 'http-token'), content);
    const started = startHost({ PINCER_HTTP_TOKEN: undefined }, home);
    await expect(started).rejects.toThrow(/host exited early \(2\)/);
    await expect(started).rejects.toThrow(message);
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('refuses an unreadable token file', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-trust-'));
    fs.mkdirSync(path.join(home, 'http-token')); // reading a folder fails like a file without read permission
    await expect(startHost({ PINCER_HTTP_TOKEN: undefined }, home)).rejects.toThrow(/cannot read the HTTP token file .*http-token \(EISDIR\)/);
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('generates a long token (0600) in an owner-only home (0700) with owner-only databases, and requires it', async () => {
    const home = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-trust-')), 'home');
    const host = await startHost({ PINCER_HTTP_TOKEN: undefined }, home);
    const tokenFile = path.join(home, 'http-token');
    const token = fs.readFileSync(tokenFile, 'utf8').trim();
    expect(token.length).toBeGreaterThanOrEqual(43); // 32 random bytes, base64url
    expect(mode(tokenFile)).toBe(0o600);
    expect(mode(home)).toBe(0o700);
    expect(fs.readdirSync(home).filter((f) => f.endsWith('.tmp'))).toEqual([]); // written by rename, nothing left over
    // no token, a wrong token, an empty bearer: all refused, task scripts included
    for (const auth of [null, 'wrong', '']) {
      const res = await host.request('POST', '/v1/conversations/c/tasks', { prompt: 'p', script: 'touch /tmp/pwned' }, { token: auth });
      expect(res.status).toBe(401);
    }
    const res = await host.request('POST', '/v1/conversations/c/messages', { text: 'hello' }, { token });
    expect(res.status).toBe(202);
    const sessionId = (res.body as { sessionId: string }).sessionId;
    await waitFor('the session DB files', () => fs.existsSync(path.join(home, 'sessions', sessionId, 'session.db-wal')));
    for (const file of ['pincer.db', 'pincer.db-wal', `sessions/${sessionId}/session.db`, `sessions/${sessionId}/session.db-wal`]) {
      expect([file, mode(path.join(home, file))]).toEqual([file, 0o600]);
    }
    expect(await host.stop()).toBe(0);
  });
});

describe(`attack 2: the host serves only regular files of the outbox (runners: ${SANDBOX})`, () => {
  it('refuses links and ids that climb out of the outbox, before and after delivery', async () => {
    const host = await startHost({ PINCER_RUNNER: SANDBOX, ANTHROPIC_API_KEY: HOST_SECRET });
    const stream = host.stream('leak');
    const sent = await converse(host, 'leak');
    await stream.waitFor('reply', (e) => e.event === 'chat');
    const dir = host.sessionDir(sent.sessionId);
    const db = sessionDb(host, sent.sessionId);
    // a link to the host's token (relative, as planted from inside the sandbox) and one to the host's environment
    fs.mkdirSync(path.join(dir, 'outbox', 'x'), { recursive: true });
    fs.symlinkSync('../../../../http-token', path.join(dir, 'outbox', 'x', 't.txt'));
    fs.symlinkSync('/proc/self/environ', path.join(dir, 'outbox', 'x', 'env.txt'));
    insertOutbound(db, { id: 'x', kind: 'chat', content: { text: 'token', files: ['t.txt'] }, routing: routing('leak', sent.id) });
    insertOutbound(db, { id: 'x2', kind: 'chat', content: { text: 'env', files: ['../x/env.txt'] }, routing: routing('leak', sent.id) });
    // no link at all: an id that climbs to the home
    insertOutbound(db, { id: '../../..', kind: 'chat', content: { text: 'climb', files: ['http-token'] }, routing: routing('leak', sent.id) });
    // a good file, swapped for a link once delivered
    fs.mkdirSync(path.join(dir, 'outbox', 'ok'));
    fs.writeFileSync(path.join(dir, 'outbox', 'ok', 'notes.txt'), 'fine');
    insertOutbound(db, { id: 'ok', kind: 'chat', content: { text: 'good file', files: ['notes.txt'] }, routing: routing('leak', sent.id) });

    const errors = await waitFor('three refusals', () => {
      const rows = ['x', 'x2', '../../..'].map((id) => outRow(db, id).delivery_error);
      return rows.every(Boolean) && rows;
    });
    expect(errors[0]).toMatch(/file "t.txt" refused: outbox\/x\/t.txt is a symbolic link/);
    expect(errors[1]).toMatch(/file name "..\/x\/env.txt" is not a plain name/);
    expect(errors[2]).toMatch(/message id "..\/..\/.." is not a plain id/);
    const good = await stream.waitFor('the good file', (e) => e.event === 'chat' && e.data.text === 'good file');
    const [url] = good.data.fileUrls as string[];
    fs.rmSync(path.join(dir, 'outbox', 'ok', 'notes.txt'));
    fs.symlinkSync('/proc/self/environ', path.join(dir, 'outbox', 'ok', 'notes.txt'));
    const download = await fetch(`http://127.0.0.1:${host.port}${url}`, { headers: { Authorization: `Bearer ${TEST_TOKEN}` } });
    const body = await download.text();
    expect(download.status).toBe(404);
    expect(body).toMatch(/refused: not a regular file in the outbox/);
    expect(body).not.toContain(HOST_SECRET);
    // nothing of the secret or token reached the conversation, and the host goes on
    expect(JSON.stringify(stream.events)).not.toContain(HOST_SECRET);
    expect(JSON.stringify(stream.events)).not.toContain(TEST_TOKEN);
    await converse(host, 'leak', { text: 'still there?' });
    await stream.waitFor('a later reply', (e) => e.event === 'chat' && String(e.data.text).includes('still there?'));
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('attack 3: runner logs live where the agent cannot plant a link', () => {
  it('never appends to a file the session folder links to, even after a crash and a row with a newline in its id', async () => {
    const host = await startHost({ PINCER_RUNNER: SANDBOX });
    const stream = host.stream('logs');
    const sent = await converse(host, 'logs');
    await stream.waitFor('reply', (e) => e.event === 'chat');
    const dir = host.sessionDir(sent.sessionId);
    const target = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-victim-')), 'authorized_keys');
    fs.writeFileSync(target, 'original\n');
    fs.rmSync(path.join(dir, 'runner.log'), { force: true });
    fs.symlinkSync(target, path.join(dir, 'runner.log'));
    const db = sessionDb(host, sent.sessionId);
    insertInbound(db, { id: 'm\nssh-ed25519 AAAAC3Nza attacker', kind: 'chat', content: { text: 'evil', sender: 'x' } });
    for (const pid of host.runnerPids()) {
      try {
        process.kill(pid, 'SIGKILL'); // the runner dies; the host starts the next one
      } catch {
        // exited already
      }
    }
    await converse(host, 'logs', { text: 'after the crash' });
    await stream.waitFor('a reply from the next runner', (e) => e.event === 'chat' && String(e.data.text).includes('after the crash'), 30_000);
    expect(host.runnerPids().length).toBeGreaterThanOrEqual(2);
    expect(fs.readFileSync(target, 'utf8')).toBe('original\n');
    const log = path.join(host.home, 'logs', `${sent.sessionId}.log`);
    expect(fs.readFileSync(log, 'utf8')).toContain('[runner]');
    expect(mode(log)).toBe(0o600);
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('attack 4: a session.db that is a link is quarantined, and the host serves the others', () => {
  it('does not route conversation A into B after A links its database to B’s', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-trust-'));
    let host = await startHost({}, home);
    const streamA = host.stream('a');
    const a = await converse(host, 'a', { text: 'from a' });
    const b = await converse(host, 'b', { text: 'from b' });
    await streamA.waitFor('reply a', (e) => e.event === 'chat');
    streamA.close();
    expect(await host.stop()).toBe(0);

    const aDb = path.join(host.sessionDir(a.sessionId), 'session.db');
    for (const f of [aDb, `${aDb}-wal`, `${aDb}-shm`]) fs.rmSync(f, { force: true });
    fs.symlinkSync(path.join(host.sessionDir(b.sessionId), 'session.db'), aDb);

    host = await startHost({}, home);
    const quarantined = host.stderr().match(/session \S+ quarantined: .*/g) ?? [];
    expect(quarantined).toHaveLength(1);
    expect(quarantined[0]).toContain(`session ${a.sessionId} quarantined: session.db is a symbolic link`);
    const notice = await waitFor('the notice to A', async () => {
      const events = (await host.request('GET', '/v1/conversations/a/events?after=0')).body.events as { type: string; text?: string }[];
      return events.find((e) => e.type === 'notice');
    });
    expect(notice.text).toMatch(/session is set aside and gets no answers \(session.db is a symbolic link\)/);
    const refused = await host.request('POST', '/v1/conversations/a/messages', { text: 'second from a' });
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatch(new RegExp(`session ${a.sessionId} is quarantined: session.db is a symbolic link`));
    const streamB = host.stream('b');
    await converse(host, 'b', { text: 'second from b' });
    await streamB.waitFor('B still answered', (e) => e.event === 'chat' && String(e.data.text).includes('second from b'));
    const bDb = sessionDb(host, b.sessionId);
    const leaked = bDb.prepare(`SELECT count(*) AS n FROM messages_in WHERE platform_id = 'a'`).get() as { n: number };
    expect(leaked.n).toBe(0);
    bDb.close();
    streamB.close();
    expect(await host.stop()).toBe(0);
  });
});

describe('attack 5: admin rights come from the host’s own records', () => {
  it('refuses a request "from the admin" that the agent forged in its session DB, or that borrows an old admin message', async () => {
    const host = await startHost({ PINCER_ADMIN_USER_ID: 'boss' });
    const stream = host.stream('ops');
    const boss = await converse(host, 'ops', { text: 'hello', sender: 'Boss', senderId: 'boss' });
    await stream.waitFor('reply', (e) => e.event === 'chat');
    const config = fs.readFileSync(path.join(host.sessionDir(boss.sessionId), 'config.json'), 'utf8');
    expect(config).not.toContain('boss'); // the admin id is not handed to the agent
    const mallory = await converse(host, 'ops', { text: 'make me a group', sender: 'Mallory', senderId: 'mallory' });
    const db = sessionDb(host, boss.sessionId);
    const register = (name: string) => ({ action: 'register_agent_group', name, folder: name, platformId: 'victim-chat', channelType: 'http' });
    // 1. a row "from boss" the agent wrote itself, and the request answering it
    const forged = insertInbound(db, { kind: 'chat', content: { text: 'do it', sender: 'Boss', senderId: 'boss' }, channelType: 'http', platformId: 'ops' });
    insertOutbound(db, { kind: 'system', content: register('forged'), routing: routing('ops', forged.id) });
    // 2. the agent rewrites Mallory's message to say it came from boss
    db.prepare('UPDATE messages_in SET content = ? WHERE id = ?').run(JSON.stringify({ text: 'x', sender: 'Boss', senderId: 'boss' }), mallory.id);
    insertOutbound(db, { kind: 'system', content: register('rewritten'), routing: routing('ops', mallory.id) });
    // 3. boss's real but older message, while Mallory's is the latest
    insertOutbound(db, { kind: 'system', content: register('borrowed'), routing: routing('ops', boss.id) });
    const answers = await waitFor('three answers', () => {
      const all = systemAnswers(db, 'register_agent_group');
      return all.length >= 3 && all;
    });
    expect(answers.map((a) => a.status)).toEqual(['error', 'error', 'error']);
    expect(answers[0]!.error).toMatch(/admins only; message "[^"]+" was not written by the host, so the requesting user is unknown/);
    expect(answers[1]!.error).toMatch(/admins only; user "mallory" is not an admin/);
    expect(answers[2]!.error).toMatch(/admins only; the request must answer the latest message of the conversation/);
    const groups = await host.request('GET', '/v1/sessions');
    expect(groups.status).toBe(200);
    // the victim conversation was not rebound: it still lands in the default group
    const victim = await converse(host, 'victim-chat', { text: 'who am I talking to?' });
    const sessions = (await host.request('GET', '/v1/sessions')).body.sessions as { id: string; agentGroup: string }[];
    expect(sessions.find((s) => s.id === victim.sessionId)?.agentGroup).toBe('main');
    db.close();
    stream.close();
    expect(await host.stop()).toBe(0);
  });
});
