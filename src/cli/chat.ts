import type { Command } from 'commander';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { openSessionDb } from '../db/connection.js';
import { OutboundChatSchema } from '../db/content.js';
import { createSessionFolder } from '../db/layout.js';
import { insertInbound, outboundAfter } from '../db/messages.js';
import { prepared } from '../db/connection.js';
import { spawnRunner, stopRunner } from '../host/runner-process.js';
import { Waker } from '../runner/wake.js';

/**
 * `pincer chat`: talk to an agent from the terminal. Creates (or reuses) a session folder, starts a runner child
 * process on it, writes each line you type as a chat message and prints the agent's replies as they arrive.
 */
export function registerChatCommand(program: Command): void {
  program
    .command('chat')
    .description('talk to an agent in this terminal')
    .option('--provider <name>', 'claude | codex | opencode | mock | auto', process.env.AGENT_PROVIDER ?? 'auto')
    .option('--dir <dir>', 'session folder (default: $PINCER_HOME/sessions/chat, PINCER_HOME defaulting to ./.pincer)')
    .action(async (options: { provider: string; dir?: string }) => {
      process.exitCode = await chat(options);
    });
}

async function chat(options: { provider: string; dir?: string }): Promise<number> {
  const home = path.resolve(process.env.PINCER_HOME ?? '.pincer');
  const paths = createSessionFolder(options.dir ?? path.join(home, 'sessions', 'chat'));
  const logFile = path.join(paths.root, 'runner.log');
  const db = openSessionDb(paths.db);
  const sender = os.userInfo().username;
  let lastSeq = (prepared(db, 'SELECT COALESCE(MAX(seq), 0) AS s FROM messages_out').get() as { s: number }).s;

  // `auto` falls back to mock here (not claude), so `npx pincer chat` works without a key.
  const env = { ...process.env, AGENT_PROVIDER: options.provider, PINCER_AUTO_FALLBACK: process.env.PINCER_AUTO_FALLBACK || 'mock' };
  const runner = spawnRunner({ workspace: paths.root, env, logFile });
  let runnerExit: number | string | null = null;
  const exited = new Promise<void>((resolve) => runner.once('exit', (code, signal) => ((runnerExit = code ?? signal), resolve())));

  const interactive = process.stdin.isTTY === true;
  const rl = readline.createInterface({ input: process.stdin, output: process.stdout, terminal: interactive });
  const prompt = (): void => {
    if (interactive) rl.prompt();
  };
  rl.setPrompt('you> ');
  if (interactive) process.stdout.write(`Pincer chat (provider ${options.provider}); session ${paths.root}. Ctrl-D to quit.\n`);

  const waker = new Waker(paths.root, 'watch');
  const printReplies = (): void => {
    for (const row of outboundAfter(db, lastSeq)) {
      lastSeq = row.seq;
      const content = OutboundChatSchema.safeParse(safeJson(row.content));
      if (row.kind === 'chat' && content.success) {
        const files = content.data.files?.length ? ` [files: ${content.data.files.join(', ')}]` : '';
        process.stdout.write(`${interactive ? '\r' : ''}agent> ${content.data.text}${files}\n`);
        prompt();
      }
    }
  };

  let inputClosed = false;
  rl.on('line', (line) => {
    const text = line.trim();
    if (text.length > 0) insertInbound(db, { kind: 'chat', content: { text, sender } });
    prompt();
  });
  rl.on('close', () => {
    inputClosed = true;
    waker.notify();
  });
  prompt();

  const keepAlive = setInterval(() => undefined, 1 << 30);
  while (runnerExit === null) {
    await Promise.race([waker.wait(1000), exited]);
    printReplies();
    // With piped input, quit once everything typed has been answered (or given up on).
    if (inputClosed && !hasOpenMessages(db)) break;
  }
  clearInterval(keepAlive);
  waker.close();
  rl.close();
  let code = 0;
  if (runnerExit !== null) {
    process.stderr.write(`pincer: the runner exited (${runnerExit}); its log:\n${tail(logFile)}\n`);
    code = 1;
  } else {
    await stopRunner(runner);
  }
  printReplies();
  db.close();
  return code;
}

function hasOpenMessages(db: ReturnType<typeof openSessionDb>): boolean {
  return (
    prepared(db, `SELECT 1 FROM messages_in WHERE status IN ('pending', 'processing') AND last_error IS NULL LIMIT 1`).get() !==
    undefined
  );
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function tail(file: string, lines = 10): string {
  if (!fs.existsSync(file)) return '(no log)';
  return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
}
