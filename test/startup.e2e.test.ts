import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI, startRunner, stopAllRunners } from './support/runner-harness.js';
import { cleanupSessions, createTestSession } from './support/session.js';
import { waitFor } from './support/wait.js';

afterEach(async () => {
  expect(await stopAllRunners()).toBe(0);
  cleanupSessions();
});

describe('runner start-up with bad configuration', () => {
  it.each([
    ['an unknown provider', (_dir: string) => ({ AGENT_PROVIDER: 'claud' }), /^[0-9T:.Z-]+ \[runner\] error: unknown provider "claud" \(known: .*mock.*\)$/],
    [
      'a missing workspace',
      (dir: string) => ({ PINCER_WORKSPACE: path.join(dir, 'nope') }),
      /^[0-9T:.Z-]+ \[runner\] error: workspace not found: .*nope \(set PINCER_WORKSPACE/,
    ],
    [
      'an unreadable DB',
      (dir: string) => (fs.writeFileSync(path.join(dir, 'session.db'), 'not sqlite'.repeat(100)), {}),
      /^[0-9T:.Z-]+ \[runner\] error: cannot open session database .*session\.db: file is not a database$/,
    ],
    ['a missing DB', (dir: string) => (fs.rmSync(path.join(dir, 'session.db')), {}), /^[0-9T:.Z-]+ \[runner\] error: session database not found: /],
    [
      'an invalid config.json',
      (dir: string) => (fs.writeFileSync(path.join(dir, 'config.json'), '{"sesionId": "x"}'), {}),
      /^[0-9T:.Z-]+ \[runner\] error: invalid .*config\.json: Unrecognized key: "sesionId"$/,
    ],
    [
      'a bad number in the environment',
      (_dir: string) => ({ PINCER_POLL_IDLE_MS: 'soon' }),
      /^[0-9T:.Z-]+ \[runner\] error: bad environment: PINCER_POLL_IDLE_MS: /,
    ],
    ['an unknown time zone', (_dir: string) => ({ TZ: 'Mars/Olympus' }), /^[0-9T:.Z-]+ \[runner\] error: unknown time zone "Mars\/Olympus"/],
  ])('exits 2 with one clear line for %s', (_name, setup, line) => {
    const s = createTestSession();
    for (const f of ['session.db-wal', 'session.db-shm']) fs.rmSync(path.join(s.paths.root, f), { force: true });
    s.db.close();
    const env = setup(s.paths.root);
    const result = spawnSync(process.execPath, [BUILT_CLI, 'runner'], {
      env: { PATH: process.env.PATH, AGENT_PROVIDER: 'mock', TZ: 'UTC', PINCER_WORKSPACE: s.paths.root, ...env },
      encoding: 'utf8',
      timeout: 10_000,
    });
    expect(result.status).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(line);
  });
});

describe('concurrent writers', () => {
  it('two processes inserting 1,000 rows each while the runner works: unique seqs, nothing lost, no SQLITE_BUSY', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root, { PINCER_LOG_LEVEL: 'warn' });
    const script = fileURLToPath(new URL('./support/insert-many.mjs', import.meta.url));
    const writer = (tag: string) =>
      new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
        const child = spawn(process.execPath, [script, s.paths.db, '1000', tag], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d));
        child.stderr.on('data', (d: Buffer) => (err += d));
        child.on('exit', (code) => resolve({ code, out, err }));
      });
    const [a, b] = await Promise.all([writer('A'), writer('B')]);
    expect([a.err, b.err]).toEqual(['', '']);
    expect([a.code, b.code]).toEqual([0, 0]);
    const seqs = [...(JSON.parse(a.out) as number[]), ...(JSON.parse(b.out) as number[])];
    expect(new Set(seqs).size).toBe(2000);
    await waitFor(
      'all 2,000 completed',
      () => (s.db.prepare(`SELECT count(*) AS n FROM messages_in WHERE status = 'completed'`).get() as { n: number }).n === 2000,
      { timeoutMs: 60_000, intervalMs: 50 },
    );
    const all = s.db.prepare('SELECT seq FROM messages_in UNION ALL SELECT seq FROM messages_out').all() as { seq: number }[];
    expect(new Set(all.map((r) => r.seq)).size).toBe(all.length);
    expect(runner.stderr()).not.toMatch(/SQLITE_BUSY|database is locked/);
    await runner.stop();
  }, 90_000);
});

describe('pincer CLI', () => {
  const cli = (args: string[], input?: string, env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, [BUILT_CLI, ...args], {
      encoding: 'utf8',
      input,
      timeout: 20_000,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC', ...env },
    });

  it('session create makes the documented folder layout with a schema-current DB', () => {
    const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-cli-')), 's');
    const result = cli(['session', 'create', dir]);
    expect(result.status).toBe(0);
    for (const name of ['session.db', 'agent', 'global', 'downloads', 'outbox', 'extra']) expect(fs.existsSync(path.join(dir, name))).toBe(true);
    fs.rmSync(path.dirname(dir), { recursive: true });
  });

  it('send validates content and options before writing', () => {
    const s = createTestSession();
    expect(cli(['send', s.paths.root, 'x', '--kind', 'webhook']).stderr).toMatch(/--kind webhook needs --content-json/);
    const bad = cli(['send', s.paths.root, 'x', '--kind', 'task', '--content-json', '{"script":"x"}']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/invalid task content: prompt/);
    expect(cli(['send', s.paths.root, 'x', '--process-after', 'tomorrow-ish']).stderr).toMatch(/not a time/);
    expect(cli(['send', s.paths.root, 'x', '--trigger', '2']).stderr).toMatch(/must be 0 or 1/);
    expect(s.allInbound()).toHaveLength(0);
    const ok = cli(['send', s.paths.root, 'hi', '--sender', 'bob', '--trigger', '0', '--process-after', '2030-01-01 09:00', '--thread-id', 't1'], undefined, {
      TZ: 'Asia/Shanghai',
    });
    expect(JSON.parse(ok.stdout)).toMatchObject({ seq: 1 });
    expect(s.allInbound()[0]).toMatchObject({
      trigger: 0,
      process_after: '2030-01-01T01:00:00.000Z',
      thread_id: 't1',
      content: '{"text":"hi","sender":"bob"}',
    });
  });

  it('outbox prints rows as JSON lines and --follow prints new ones as they come', async () => {
    const s = createTestSession();
    const runner = startRunner(s.paths.root);
    s.chat('one');
    await waitFor('reply', () => s.outbound().length === 1);
    const lines = cli(['outbox', s.paths.root]).stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!).content.text).toContain('one</message>');

    const follow = spawn(process.execPath, [BUILT_CLI, 'outbox', s.paths.root, '--follow', '--after', '2'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    follow.stdout.on('data', (d: Buffer) => (out += d));
    s.chat('two');
    await waitFor('followed line', () => out.includes('two</message>'));
    expect(out.trim().split('\n')).toHaveLength(1);
    follow.kill('SIGTERM');
    await new Promise((resolve) => follow.once('exit', resolve));
    await runner.stop();
  });

  it('chat with piped input answers through a runner child process and exits', () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chat-'));
    const result = cli(['chat', '--provider', 'mock'], 'hello <there>\n', { PINCER_HOME: home });
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^agent> echo: <context timezone="UTC"\/>/);
    expect(result.stdout).toContain('hello &lt;there&gt;</message>');
    expect(fs.existsSync(path.join(home, 'sessions', 'chat', 'session.db'))).toBe(true);
    fs.rmSync(home, { recursive: true });
  });
});
