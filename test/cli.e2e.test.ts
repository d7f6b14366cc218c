/**
 * The `pincer` command as a user meets it: every usage or input error is one line naming what is wrong with a hint
 * (`see pincer send --help`) and exit code 2, with no stack trace unless PINCER_LOG_LEVEL=debug, and nothing is
 * written; `--version`; the default home is `~/.pincer` wherever the command is typed.
 */
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-cli-'));
const session = path.join(root, 'session');
const missing = path.join(root, 'nonexistent');

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function cli(args: string[], env: Record<string, string> = {}, cwd = root) {
  const result = spawnSync(process.execPath, [BUILT_CLI, ...args], {
    cwd,
    env: { PATH: process.env.PATH, HOME: root, TZ: 'UTC', CLAUDE_CONFIG_DIR: path.join(root, 'no-claude-login'), ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function inbound(): number {
  const db = new Database(path.join(session, 'session.db'), { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM messages_in').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('pincer command errors', () => {
  expect(cli(['session', 'create', session]).status).toBe(0);

  it.each([
    ['an unknown command', ['chta'], /^pincer: unknown command 'chta' \(Did you mean chat\?\) \(see pincer --help\)$/],
    ['a missing argument', ['send'], /^pincer: missing required argument 'dir' \(see pincer send --help\)$/],
    ['an unknown option', ['outbox', session, '--bogus'], /^pincer: unknown option '--bogus' \(see pincer outbox --help\)$/],
    [
      'send to a folder that is not a session',
      ['send', missing, 'hi'],
      /^pincer: .*nonexistent is not a session folder \(no session\.db\); create one with: pincer session create .*\(see pincer send --help\)$/,
    ],
    ['outbox of a folder that is not a session', ['outbox', missing], /^pincer: .*nonexistent is not a session folder .*\(see pincer outbox --help\)$/],
    ['empty text', ['send', session, ''], /^pincer: <text> is empty: say what the message is \(see pincer send --help\)$/],
    [
      'an unknown kind',
      ['send', session, 'hi', '--kind', 'letter'],
      /^pincer: option '--kind <kind>' argument 'letter' is invalid\. Allowed choices are chat, chat-sdk, task, webhook, system\. \(see pincer send --help\)$/,
    ],
    ['a bad time', ['send', session, 'hi', '--process-after', 'tomorrow'], /^pincer: --process-after: not a time: "tomorrow" \(see pincer send --help\)$/],
    [
      'a bad seq',
      ['outbox', session, '--after', 'x'],
      /^pincer: option '--after <seq>' argument 'x' is invalid\. must be a message seq .*\(see pincer outbox --help\)$/,
    ],
    [
      'a bad port',
      ['host', '--http', 'abc'],
      /^pincer: option '--http <port>' argument 'abc' is invalid\. must be a port number .*\(see pincer host --help\)$/,
    ],
    ['a workspace that does not exist', ['doctor', '--workspace', missing], /^pincer: --workspace .*nonexistent: no such folder \(see pincer doctor --help\)$/],
    [
      'OpenCode without a model',
      ['chat', '--provider', 'opencode'],
      /^pincer: provider "opencode" \(session policy "opencode"\) has no credentials: set OPENCODE_MODEL .*\(see pincer chat --help\)$/,
    ],
    [
      'Codex without a key',
      ['chat', '--provider', 'codex'],
      /^pincer: provider "codex" \(session policy "codex"\) has no credentials: set OPENAI_API_KEY or CODEX_API_KEY .*\(see pincer chat --help\)$/,
    ],
    ['a misspelt provider', ['chat', '--provider', 'claud'], /^pincer: unknown provider "claud" \(known: .*\) \(see pincer chat --help\)$/],
  ])('%s: one line, a hint, exit 2, nothing written', (_case, args, line) => {
    const result = cli(args);
    expect(result.status).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr.trim()).toMatch(line);
    expect(result.stdout).toBe('');
    expect(inbound()).toBe(0);
  });

  it('shows the stack trace only with PINCER_LOG_LEVEL=debug', () => {
    const debug = cli(['send', missing, 'hi'], { PINCER_LOG_LEVEL: 'debug' });
    expect(debug.status).toBe(2);
    expect(debug.stderr).toMatch(/\n\s+at .*messages\.[jt]s/);
  });

  it('prints its version', () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) expect(cli([flag])).toMatchObject({ status: 0, stdout: `${version}\n`, stderr: '' });
  });
});

describe('the default home', () => {
  // Start-up refusals: one line before any banner or prompt, exit 2, nothing typed is kept for a later provider.
  const file = path.join(root, 'a-file');
  fs.writeFileSync(file, '');
  it.each<[string, string[], Record<string, string>, RegExp]>([
    [
      'the built-in runtime with no model',
      ['chat', '--provider', 'pincer'],
      {},
      /^pincer: provider "pincer" \(session policy "pincer"\) has no model: set PINCER_MODEL=<provider>\/<model> .*\(see pincer chat --help\)$/,
    ],
    [
      'a local model with no base URL',
      ['chat'],
      { AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'local/x' },
      /^pincer: provider "pincer" \(session policy "pincer"\): model "local\/x": local models need OPENAI_BASE_URL .*\(see pincer chat --help\)$/,
    ],
    [
      'a home under /proc',
      ['chat', '--provider', 'mock', '--home', '/proc/pincer'],
      {},
      /^pincer: cannot use \/proc\/pincer as the Pincer home: it is inside \/proc, a kernel file system; choose a folder you can write with --home or PINCER_HOME \(the default is .*\.pincer\) \(see pincer chat --help\)$/,
    ],
    [
      'a home under a file',
      ['chat', '--provider', 'mock'],
      { PINCER_HOME: path.join(file, 'home') },
      /^pincer: cannot use .*a-file\/home as the Pincer home: it, or a folder on its path, is a file; choose a folder .*\(see pincer chat --help\)$/,
    ],
    [
      'a host home under /proc',
      ['host', '--home', '/proc/pincer'],
      {},
      /^pincer: cannot use \/proc\/pincer as the Pincer home: it is inside \/proc.*\(see pincer host --help\)$/,
    ],
  ])('%s: refused in one line, exit 2, before the prompt', (_case, args, env, line) => {
    const result = spawnSync(process.execPath, [BUILT_CLI, ...args], {
      cwd: root,
      input: 'hello\n',
      env: { PATH: process.env.PATH, HOME: root, TZ: 'UTC', CLAUDE_CONFIG_DIR: path.join(root, 'no-claude-login'), PINCER_RUNNER: 'process', ...env },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(result.status).toBe(2);
    expect(
      result.stderr
        .trim()
        .split('\n')
        .filter((l) => !/^\d{4}-\d{2}-\d{2}T/.test(l)),
    ).toEqual([expect.stringMatching(line)]);
    expect(result.stdout).toBe('');
  });

  it('a built-in-runtime chat whose model server does not answer is refused naming OPENAI_BASE_URL', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const result = cli(['chat'], {
      AGENT_PROVIDER: 'pincer',
      PINCER_MODEL: 'local/qwen3:8b',
      OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`,
      PINCER_HOME: path.join(root, 'probe-home'),
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toBe(
      `pincer: OPENAI_BASE_URL http://127.0.0.1:${port}/v1: no model server answers there (ECONNREFUSED); start it or fix OPENAI_BASE_URL (see pincer chat --help)\n`,
    );
    expect(result.stdout).toBe('');
  });

  it('is ~/.pincer wherever the command is typed, and doctor says what chat and host would run there', () => {
    const elsewhere = fs.mkdtempSync(path.join(root, 'cwd-'));
    const first = spawnSync(process.execPath, [BUILT_CLI, 'chat', '--provider', 'mock'], {
      cwd: elsewhere,
      input: 'hello\n',
      env: { PATH: process.env.PATH, HOME: root, TZ: 'UTC' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(first.status).toBe(0);
    expect(first.stdout).toContain('agent> echo:');
    expect(fs.existsSync(path.join(root, '.pincer', 'sessions', 'chat', 'session.db'))).toBe(true);
    expect(fs.existsSync(path.join(elsewhere, '.pincer'))).toBe(false);

    const doctor = cli(['doctor'], {}, elsewhere);
    expect(doctor.stdout).toContain(`session chat (${path.join(root, '.pincer', 'sessions', 'chat')})`);
    // `--provider mock` was for that chat: the group keeps the provider it was created with (auto), which a chat
    // runs on the mock here and a host cannot start without a key.
    expect(doctor.stdout).toMatch(/^pincer chat would run: mock — auto \(session policy "auto"\): no provider is usable, falling back to mock$/m);
    expect(doctor.stdout).toMatch(/^pincer host would run: ✗ auto \(session policy "auto"\): .*\(agent group main\)$/m);
  });

  it('doctor is honest about a home where auto finds nothing: chat falls back to mock, the host cannot start', () => {
    const home = fs.mkdtempSync(path.join(root, 'home-'));
    const doctor = cli(['doctor'], { PINCER_HOME: home });
    expect(doctor.stdout).toMatch(/^pincer chat would run: mock — auto \(session policy "auto"\): no provider is usable, falling back to mock$/m);
    expect(doctor.stdout).toMatch(
      /^pincer host would run: ✗ auto \(session policy "auto"\): no provider is usable and the fallback "claude" has no credentials: set ANTHROPIC_API_KEY .*\(agent group main, created on first start\)$/m,
    );
    expect(doctor.stdout).toMatch(/^ {2}codex +no credentials: set OPENAI_API_KEY or CODEX_API_KEY/m);
    expect(doctor.stdout).toMatch(/^ {2}opencode +no credentials: set OPENCODE_MODEL/m);
  });
});
