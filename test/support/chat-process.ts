import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TEST_RUNNER } from './host-harness.js';
import { BUILT_CLI } from './runner-harness.js';

/**
 * `pincer chat` (the built CLI) with piped input in a fresh home: the input is written and stdin closed, and the chat
 * exits once everything is answered. Plain child-process runners, as the host harness uses. Returns the exit code,
 * what it printed, and the home (removed by `cleanup`, which also kills a chat that did not exit).
 */
export interface PipedChat {
  code: number | null;
  stdout: string;
  stderr: string;
  home: string;
  cleanup(): void;
}

export async function runPipedChat(args: string[], env: Record<string, string>, input: string, timeoutMs = 60_000): Promise<PipedChat> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chat-'));
  const child = spawn(process.execPath, [BUILT_CLI, 'chat', ...args], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PINCER_HOME: home, TZ: 'UTC', PINCER_RUNNER: TEST_RUNNER, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdin.end(input);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await exited;
  clearTimeout(timer);
  return {
    code,
    stdout,
    stderr,
    home,
    cleanup: () => fs.rmSync(home, { recursive: true, force: true }),
  };
}
