/**
 * `pincer chat` while `pincer host` runs on the same home: the chat attaches to that host through the home's chat
 * socket (owner-only) instead of being refused or starting a second host. Real processes: the host, the chat with
 * piped input, the host's runner child on the mock provider.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BUILT_CLI } from './support/runner-harness.js';
import { waitFor } from './support/wait.js';

const homes: string[] = [];
const children: ChildProcess[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const home of homes.splice(0)) fs.rmSync(home, { recursive: true, force: true });
});

const ENV = { PATH: process.env.PATH, TZ: 'UTC', CLAUDE_CONFIG_DIR: path.join(os.tmpdir(), 'pincer-no-claude-login'), PINCER_RUNNER: 'process' };

function run(home: string, args: string[], input?: string) {
  const child = spawn(process.execPath, [BUILT_CLI, ...args], {
    env: { ...ENV, HOME: home, PINCER_HOME: home },
    stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  if (input !== undefined) child.stdin!.end(input);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

function lockOf(home: string): { pid: number; chatSocket?: string; command?: string } | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(home, 'host.lock'), 'utf8')) as { pid: number; chatSocket?: string };
  } catch {
    return undefined; // not written yet
  }
}

describe('pincer chat with a host running on its home', { timeout: 120_000 }, () => {
  it('attaches to that host over its owner-only socket, gets the answer, and starts no second host', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-attach-'));
    homes.push(home);
    const host = run(home, ['host', '--provider', 'mock']);
    await waitFor('the host to announce its chat socket', () => lockOf(home)?.chatSocket !== undefined, { timeoutMs: 60_000 });
    const socket = lockOf(home)!.chatSocket!;
    expect(socket).toBe(path.join(home, 'chat.sock'));
    expect(fs.statSync(socket).isSocket()).toBe(true);
    expect(fs.statSync(socket).mode & 0o777).toBe(0o600);

    const chat = run(home, ['chat'], 'hello through the socket\n');
    expect(await chat.exited).toBe(0);
    expect(chat.stdout()).toMatch(/^agent> echo: [\s\S]*<message [^>]*>hello through the socket<\/message>/m);
    expect(chat.stderr()).toBe('');
    // No second host: the lock is still the first host's, the chat never printed its own host's banner or log, and
    // the running host served it.
    expect(lockOf(home)?.pid).toBe(host.child.pid);
    expect(lockOf(home)?.command).toBe('host');
    expect(fs.existsSync(path.join(home, 'host.log'))).toBe(false);
    expect(host.stderr()).toContain('pincer chat attached');
    expect(host.child.exitCode).toBeNull();

    // A second chat later is the same conversation: the agent remembers nothing of it here (mock), but it answers.
    const again = run(home, ['chat'], 'and again\n');
    expect(await again.exited).toBe(0);
    expect(again.stdout()).toMatch(/^agent> echo: [\s\S]*>and again<\/message>/m);

    // The chat's conversation lives where a `pincer chat` of its own would keep it.
    expect(fs.existsSync(path.join(home, 'sessions', 'chat', 'session.db'))).toBe(true);

    host.child.kill('SIGTERM');
    expect(await host.exited).toBe(0);
    expect(fs.existsSync(socket)).toBe(false);
    expect(fs.existsSync(path.join(home, 'host.lock'))).toBe(false);
  });
});
