import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSessionDb, prepared } from '../src/db/connection.js';
import { createSessionFolder } from '../src/db/layout.js';
import { insertInbound } from '../src/db/messages.js';
import { Waker } from '../src/db/wake.js';
import { CLI_ENTRY, SESSION_NODE_FLAGS } from '../src/shared/cli-entry.js';
import { stdinDocumentLine } from '../src/shared/stdin-document.js';
import { stopRunner } from '../src/container/runner-process.js';

/**
 * A message for a session with no runner, answered by a warm spare (PINCER_SPARE=1, what a process-mode host with
 * PINCER_SPARE_RUNNERS keeps): the spare is started and has said `spare ready`; the message is committed, then the
 * spare is given the session (the launch document a host writes), and the clock stops at the reply row. The baseline
 * is the cold start of the same group (spawn → reply to a pending message), which the spare skips.
 */
export async function measureSpare(samples: number): Promise<number[]> {
  const result: number[] = [];
  for (let i = 0; i < samples; i++) result.push(await oneSpare());
  return result;
}

async function oneSpare(): Promise<number> {
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', TZ: 'UTC' };
  const child = spawn(process.execPath, [...SESSION_NODE_FLAGS, CLI_ENTRY, 'runner'], {
    env: { ...base, PINCER_STOP_ON_STDIN_EOF: '1', PINCER_SPARE: '1' },
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-bench-spare-'));
  const paths = createSessionFolder(root);
  const db = openSessionDb(paths.db);
  const waker = new Waker(root, 'watch', '');
  try {
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await until(waker, 'spare ready', () => stderr.includes('spare ready') || child.exitCode !== null);
    // what a spare waits for costs nothing measured here: give it a moment past its start-up's own after-work
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { id } = insertInbound(db, { kind: 'chat', content: { text: 'spare-end', sender: 'bench' } });
    const started = performance.now();
    const env = { ...base, AGENT_PROVIDER: 'mock', PINCER_WAKE: 'watch', MOCK_DELAY_MS: '0', PINCER_STOP_ON_STDIN_EOF: '1', PINCER_WORKSPACE: root };
    child.stdin!.write(stdinDocumentLine({ secrets: {}, env }));
    await until(waker, 'the reply', () => prepared(db, 'SELECT 1 FROM messages_out WHERE in_reply_to = ?').get(id) !== undefined || child.exitCode !== null);
    if (child.exitCode !== null) throw new Error(`spare runner exited ${child.exitCode}: ${stderr}`);
    return performance.now() - started;
  } finally {
    await stopRunner(child, 3000);
    waker.close();
    db.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

async function until(waker: Waker, what: string, check: () => boolean): Promise<void> {
  const deadline = performance.now() + 30_000;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await waker.wait(20);
  }
}
