import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';

/** `pincer session-serve` on its own, as the host launches it: the launch document on stdin, the port over HTTP. */
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
    }
  }
  cleanupSessions();
});

const TOKEN = 'launch-bearer-0123456789abcdef';

function launchDocument(folder: string, overrides: Record<string, unknown> = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-serve-'));
  return {
    sessionId: 's-serve',
    epoch: 3,
    token: TOKEN,
    listen: '127.0.0.1:0',
    orphanMs: 60_000,
    sweep: {
      intervalMs: 200,
      idleIntervalMs: 60_000,
      staleMs: 300,
      retryBaseMs: 50,
      retryMaxMs: 1000,
      maxTries: 5,
      taskHistory: { keepRuns: 20, keepDays: 7 },
    },
    runners: {
      kind: 'process',
      idleTimeoutMs: 60_000,
      heartbeatTimeoutMs: 30_000,
      startTimeoutMs: 60_000,
      stopGraceMs: 3000,
      turnLimitMs: 600_000,
      backoffBaseMs: 100,
      backoffMaxMs: 1000,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    },
    launch: { groupDir: path.join(dir, 'agent'), globalDir: path.join(dir, 'global'), logFile: path.join(dir, 'runner.log') },
    ...overrides,
  };
}

function serve(folder: string, doc: unknown, env: Record<string, string> = {}): { child: ChildProcess; ready: Promise<string>; stderr: () => string } {
  const child = spawn(process.execPath, [BUILT_CLI, 'session-serve', folder], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
  });
  children.push(child);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdin!.write(`${JSON.stringify(doc)}\n`);
  const ready = new Promise<string>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  ready.catch(() => undefined); // a refusal test waits for the exit instead
  return { child, ready, stderr: () => stderr };
}

function call(url: string, method: string, args: unknown, headers: Record<string, string> = {}, session = 's-serve') {
  return fetch(`${url}/v1/sessions/${session}/call/${method}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'x-pincer-epoch': '3', 'content-type': 'application/json', ...headers },
    body: typeof args === 'string' ? args : JSON.stringify({ args }),
  });
}

describe('pincer session-serve', () => {
  it('refuses what is not its launch’s: 401 without the bearer (nothing stored), 409 for another epoch, 404 for another session, 400 for a bad body', async () => {
    const session = createTestSession();
    const { ready } = serve(session.paths.root, launchDocument(session.paths.root));
    const url = await ready;
    const health = await fetch(`${url}/v1/health`);
    expect(health.headers.get('x-pincer-epoch')).toBe('3');
    const row = { id: 'm-1', kind: 'chat', content: { text: 'hi', sender: 'ann' }, channelType: 'http', platformId: 'c', threadId: null };

    expect((await call(url, 'accept', [row], { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await call(url, 'accept', [row], { authorization: '' })).status).toBe(401);
    expect(session.db.prepare('SELECT count(*) AS n FROM messages_in').get()).toEqual({ n: 0 });
    const fenced = await call(url, 'accept', [row], { 'x-pincer-epoch': '2' });
    expect(fenced.status).toBe(409);
    expect(fenced.headers.get('x-pincer-epoch')).toBe('3');
    expect((await call(url, 'state', [], {}, 's-other')).status).toBe(404);
    const malformed = await call(url, 'accept', '{not json');
    expect(malformed.status).toBe(400);
    const missing = await call(url, 'accept', [{ ...row, id: undefined }]);
    expect(missing.status).toBe(400);
    expect(((await missing.json()) as { error: string }).error).toMatch(/invalid accept: .*id/);
    expect(session.db.prepare('SELECT count(*) AS n FROM messages_in').get()).toEqual({ n: 0 });

    const accepted = await call(url, 'accept', [row]);
    expect(accepted.status).toBe(200);
    const again = await call(url, 'accept', [row]); // idempotent on the host's id
    expect(((await again.json()) as { result: unknown }).result).toEqual(((await accepted.json()) as { result: unknown }).result);
    expect(session.db.prepare('SELECT count(*) AS n FROM messages_in').get()).toEqual({ n: 1 });
  });

  it('refuses a session folder on a file system SQLite’s WAL is not safe on, in one line', async () => {
    if (fs.statfsSync('/dev/shm').type !== 0x01021994) return; // the stand-in needs /dev/shm on tmpfs
    const folder = fs.mkdtempSync('/dev/shm/pincer-serve-');
    try {
      const { child, stderr } = serve(folder, launchDocument(folder), { PINCER_SESSION_REFUSE_FS: '1021994' });
      const code = await new Promise((r) => child.once('exit', r));
      expect(code).toBe(2);
      expect(stderr().trim().split('\n')).toEqual([
        expect.stringMatching(/^pincer session-serve: .* is on a refused file system .*SQLite's write-ahead log is not safe there/),
      ]);
    } finally {
      fs.rmSync(folder, { recursive: true, force: true });
    }
  });

  it('stops by itself when its host is gone: the lifeline closes, or nothing is heard for orphanMs', async () => {
    const a = createTestSession();
    const first = serve(a.paths.root, launchDocument(a.paths.root));
    await first.ready;
    first.child.stdin!.end();
    expect(await new Promise((r) => first.child.once('exit', r))).toBe(0);
    expect(first.stderr()).toMatch(/stopping \(the host closed the lifeline\)/);

    const b = createTestSession();
    const second = serve(b.paths.root, launchDocument(b.paths.root, { orphanMs: 500 }));
    await second.ready;
    expect(await new Promise((r) => second.child.once('exit', r))).toBe(0);
    expect(second.stderr()).toMatch(/stopping \(no word from the host for \d+ ms\)/);
  });

  it('exits 2 with one line for a launch document that is not one', async () => {
    const session = createTestSession();
    const { child, stderr } = serve(session.paths.root, { sessionId: 's' });
    expect(await new Promise((r) => child.once('exit', r))).toBe(2);
    expect(stderr()).toMatch(/^pincer session-serve: bad launch document: /);
  });
});
