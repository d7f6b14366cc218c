/**
 * `pincer chat` in a real terminal (tmux): the banner comes first and says which provider runs and why, and where the
 * home is; `/help` and `/quit` stay local; `working… N s` shows while the agent works; Ctrl-C or Ctrl-D with an answer
 * due says so and leaves once it is delivered, a second Ctrl-C leaves at once; a failed try reaches the chat in
 * seconds. A real host, runner child process and mock provider behind it.
 */
import Database from 'better-sqlite3';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';
import { HAS_TMUX, openTerminal, stopAllTerminals } from './support/tmux.js';
import { waitFor } from './support/wait.js';

const homes: string[] = [];
const hosts: ChildProcess[] = [];

afterEach(() => {
  stopAllTerminals();
  for (const host of hosts.splice(0)) if (host.exitCode === null && host.signalCode === null) host.kill('SIGKILL');
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

function chat(env: Record<string, string> = {}, args: string[] = []) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chat-tty-'));
  homes.push(home);
  // these are the line REPL's tests (test/chat-tui.e2e.test.ts has the terminal UI's)
  const terminal = openTerminal([process.execPath, BUILT_CLI, 'chat', ...args], { PINCER_HOME: home, TZ: 'UTC', PINCER_CHAT_UI: 'plain', ...env });
  return { terminal, home };
}

const PROMPT = /you> $/m;

describe.skipIf(!HAS_TMUX)('pincer chat in a terminal (tmux; .ci/run installs it)', () => {
  it('shows the banner first: the provider chosen and why, the home, how to leave', async () => {
    const { terminal, home } = chat();
    const screen = await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
    const lines = screen.split('\n');
    expect(lines[0]).toBe('Pincer chat — provider mock: auto (session policy "auto"): no provider is usable, falling back to mock');
    expect(screen).toContain(`home ${home}`);
    expect(screen).toContain('/quit or Ctrl-D to leave');
    expect(lines.findIndex((l) => l.startsWith('you>'))).toBeGreaterThan(lines.findIndex((l) => l.startsWith('home ')));
    terminal.keys('C-d');
    await terminal.waitFor('exit', () => terminal.exitCode() !== undefined);
    expect(terminal.exitCode()).toBe(0);
    expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(false);
  });

  it("colours the agent's lines with the group's theme (a package theme file); a pipe or TERM=dumb stays plain", { timeout: 180_000 }, async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chat-theme-'));
    homes.push(home);
    // The default group's folder, made before the chat creates it: a package with its own theme, chosen.
    const group = path.join(home, 'groups', 'main');
    fs.mkdirSync(path.join(group, 'themes'), { recursive: true });
    fs.writeFileSync(path.join(group, 'package.json'), JSON.stringify({ name: 'main', pincer: { theme: 'dusk' } }));
    const colours = {
      agent: '#ff8800',
      user: '#eeeeee',
      tool: '#aa88ff',
      notice: '#888888',
      error: '#ff0000',
      accent: '#00aaff',
      background: '#101010',
      text: '#eeeeee',
    };
    fs.writeFileSync(path.join(group, 'themes', 'dusk.json'), JSON.stringify({ name: 'dusk', colours }));
    for (const [term, coloured] of [
      ['xterm-256color', true],
      ['dumb', false],
    ] as const) {
      const terminal = openTerminal([process.execPath, BUILT_CLI, 'chat', '--provider', 'mock'], {
        PINCER_HOME: home,
        TZ: 'UTC',
        TERM: term,
        COLORTERM: 'truecolor',
        PINCER_CHAT_UI: 'plain',
      });
      await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
      terminal.line(`hello ${term}`);
      await terminal.waitFor('the answer', (s) => s.includes('agent> ') && s.includes(`hello ${term}</message>`), 60_000);
      const styled = terminal.styledScreen();
      const line = styled.split('\n').find((l) => l.includes('agent> '))!;
      // tmux gives 24-bit colours back as it stores them: 38;2;255;136;0 for #ff8800
      if (coloured) expect(line).toContain('\x1b[38;2;255;136;0m');
      else expect(line).not.toContain('\x1b[38;2;');
      terminal.keys('C-d');
      await terminal.waitFor('exit', () => terminal.exitCode() !== undefined);
      expect(terminal.exitCode()).toBe(0);
      stopAllTerminals();
    }
  });

  it('answers /help itself and leaves on /quit', async () => {
    const { terminal, home } = chat();
    await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
    terminal.line('/help');
    await terminal.waitFor('the local help', (s) => s.includes('/quit        leave'));
    terminal.line('/quit');
    await terminal.waitFor('exit', () => terminal.exitCode() !== undefined);
    expect(terminal.exitCode()).toBe(0);
    // Nothing reached the agent: no message was written to the session.
    const db = new Database(path.join(home, 'sessions', 'chat', 'session.db'), { readonly: true });
    expect(db.prepare('SELECT count(*) AS n FROM messages_in').get()).toEqual({ n: 0 });
    db.close();
    expect(terminal.screen()).not.toContain('agent>');
  });

  it('shows working… while the agent works, and Ctrl-C with an answer due waits for it, then leaves', async () => {
    const { terminal } = chat({ MOCK_DELAY_MS: '4000' });
    await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
    terminal.line('hello there');
    await terminal.waitFor('the working line', (s) => /working… [1-9]\d* s {2}you> $/m.test(s));
    terminal.keys('C-c');
    await terminal.waitFor('the waiting notice', (s) => s.includes('pincer: waiting for 1 answer — Ctrl-C again to quit'));
    const screen = await terminal.waitFor('exit', () => terminal.exitCode() !== undefined);
    expect(terminal.exitCode()).toBe(0);
    // It left only after the answer was shown.
    expect(screen.indexOf('hello there</message>')).toBeGreaterThan(screen.indexOf('waiting for 1 answer'));
  });

  it('Ctrl-D with an answer due waits; a second Ctrl-C leaves at once', async () => {
    const { terminal } = chat({ MOCK_DELAY_MS: '60000' });
    await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
    terminal.line('a slow question');
    await terminal.waitFor('the working line', (s) => /working… \d+ s/.test(s));
    terminal.keys('C-d');
    await terminal.waitFor('the waiting notice', (s) => s.includes('waiting for 1 answer — Ctrl-C again to quit'));
    terminal.keys('C-c');
    await terminal.waitFor('exit', () => terminal.exitCode() !== undefined, 20_000);
    expect(terminal.exitCode()).toBe(0);
    expect(terminal.screen()).not.toContain('agent>');
    // the runner the chat's own stop ended is no failure to retry in seconds: the message waits for the next chat
    expect(terminal.screen()).not.toContain('retrying in');
  });

  it('names the model of the built-in runtime in the banner', async () => {
    const { terminal } = chat({ AGENT_PROVIDER: 'pincer', PINCER_MODEL: 'anthropic/claude-sonnet-4-5', ANTHROPIC_API_KEY: 'sk-ant-banner-test' });
    const screen = await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
    expect(screen.split('\n')[0]).toMatch(/^Pincer chat — provider pincer: .* · model anthropic\/claude-sonnet-4-5$/);
    terminal.keys('C-d');
    await terminal.waitFor('exit', () => terminal.exitCode() !== undefined);
  });

  it('tells within seconds that the agent failed and that it will retry', async () => {
    const { terminal } = chat();
    await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
    terminal.line('please fail: mock:error');
    const screen = await terminal.waitFor('the failure notice', (s) => s.includes('pincer: the agent failed:'), 15_000);
    expect(screen).toMatch(/pincer: the agent failed: mock error: mock error \(requested by the prompt\); retrying in 2 s \(try 1 of 5\)/);
    terminal.keys('C-c');
    terminal.keys('C-c');
    await terminal.waitFor('exit', () => terminal.exitCode() !== undefined, 20_000);
  });

  it('says when --provider is for this chat only, and the group keeps its own', async () => {
    const { terminal } = chat({}, ['--provider', 'mock']);
    const screen = await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
    expect(screen.split('\n').slice(0, 2)).toEqual([
      'Pincer chat — provider mock: session policy "mock"',
      '  mock for this chat only: agent group main keeps provider auto (--save makes mock its provider)',
    ]);
    terminal.keys('C-d');
    await terminal.waitFor('exit', () => terminal.exitCode() !== undefined);
    expect(terminal.exitCode()).toBe(0);
  });

  it('attached to a running pincer host, names the host, its group and the provider that answers', { timeout: 120_000 }, async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chat-tty-'));
    homes.push(home);
    const host = spawn(process.execPath, [BUILT_CLI, 'host', '--provider', 'mock'], {
      env: { PATH: process.env.PATH, HOME: home, PINCER_HOME: home, TZ: 'UTC', PINCER_RUNNER: 'process' },
      stdio: 'ignore',
    });
    hosts.push(host);
    const lock = path.join(home, 'host.lock');
    await waitFor('the host to serve its chat socket', () => fs.existsSync(lock) && fs.readFileSync(lock, 'utf8').includes('chatSocket'), {
      timeoutMs: 60_000,
    });
    const terminal = openTerminal([process.execPath, BUILT_CLI, 'chat'], { PINCER_HOME: home, TZ: 'UTC' });
    const screen = await terminal.waitFor('the first prompt', (s) => PROMPT.test(s));
    expect(screen.split('\n')[0]).toBe(`Pincer chat — attached to pincer host (pid ${host.pid}): agent group main, provider mock — session policy "mock"`);
    terminal.line('hello host');
    await terminal.waitFor('the answer', (s) => s.includes('hello host</message>'), 60_000);
    terminal.keys('C-d');
    await terminal.waitFor('exit', () => terminal.exitCode() !== undefined);
    expect(terminal.exitCode()).toBe(0);
    const stopped = new Promise((resolve) => host.once('exit', resolve));
    host.kill('SIGTERM');
    await stopped;
  });

  it('refuses a provider that cannot start, in one line, before any banner', async () => {
    const { terminal, home } = chat({}, ['--provider', 'codex']);
    const screen = await terminal.waitFor('exit', () => terminal.exitCode() !== undefined);
    expect(terminal.exitCode()).toBe(2);
    expect(screen.split('\n')[0]).toMatch(
      /^pincer: provider "codex" \(session policy "codex"\) has no credentials: set OPENAI_API_KEY or CODEX_API_KEY .*\(see pincer chat --help\)$/,
    );
    expect(screen).not.toContain('Pincer chat');
    expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(false);
  });
});
