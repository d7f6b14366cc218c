import { InvalidArgumentError, Option, type Command } from 'commander';
import fs from 'node:fs';
import os from 'node:os';
import { openSessionDb } from '../db/connection.js';
import { INBOUND_KINDS } from '../db/types.js';
import { parseInboundContent } from '../db/content.js';
import { sessionPaths } from '../db/layout.js';
import { insertInbound, outboundAfter } from '../db/messages.js';
import type { OutboundRow } from '../db/types.js';
import { Waker } from '../db/wake.js';
import { parseTimeInZone, systemTimeZone } from '../shared/time.js';
import { PincerError } from '../shared/errors.js';
import { rawSetting } from '../shared/settings-load.js';

/** `pincer send` and `pincer outbox`: write an inbound message and read outbound ones, as the host would. */
export function registerMessageCommands(program: Command): void {
  program
    .command('send <dir> <text>')
    .description('insert a pending message into the session at <dir>; prints {"id","seq"}')
    .option('--sender <name>', 'sender of a chat message', defaultSender())
    .addOption(new Option('--kind <kind>', 'kind of message').choices(INBOUND_KINDS).default('chat'))
    .option('--content-json <json>', 'the whole content object (overrides <text>)')
    .option('--process-after <time>', 'ISO time; without a zone it is read in TZ')
    .option('--trigger <0|1>', '0 = context only, never wakes the agent', parseTrigger, 1 as 0 | 1)
    .option('--platform-id <id>')
    .option('--channel-type <type>')
    .option('--thread-id <id>')
    .action((dir: string, text: string, options: SendOptions) => {
      if (text.trim() === '' && options.contentJson === undefined) throw new PincerError('invalid-input', '<text> is empty: say what the message is');
      const paths = sessionFolder(dir);
      const content = options.contentJson ?? JSON.stringify(defaultContent(options.kind, text, options.sender));
      const parsed = parseInboundContent(options.kind, content);
      if (!parsed.ok) fail(parsed.error);
      let processAfter: string | null = null;
      if (options.processAfter) {
        processAfter = parseTimeInZone(options.processAfter, rawSetting(process.env, 'TZ') || systemTimeZone());
        if (!processAfter) fail(`--process-after: not a time: "${options.processAfter}"`);
      }
      const db = openSessionDb(paths.db);
      try {
        const written = insertInbound(db, {
          kind: options.kind,
          content,
          processAfter,
          trigger: options.trigger,
          platformId: options.platformId ?? null,
          channelType: options.channelType ?? null,
          threadId: options.threadId ?? null,
        });
        process.stdout.write(`${JSON.stringify(written)}\n`);
      } finally {
        db.close();
      }
    });

  program
    .command('outbox <dir>')
    .description('print messages_out rows as JSON lines')
    .option('--follow', 'keep printing new rows as they are written')
    .option('--after <seq>', 'only rows with a greater seq', parseSeq, 0)
    .action(async (dir: string, options: { follow?: boolean; after: number }) => {
      const paths = sessionFolder(dir);
      const db = openSessionDb(paths.db, { readonly: true });
      let last = options.after;
      const print = (): void => {
        for (const row of outboundAfter(db, last)) {
          process.stdout.write(`${JSON.stringify(outboundJson(row))}\n`);
          last = row.seq;
        }
      };
      print();
      if (!options.follow) {
        db.close();
        return;
      }
      const waker = new Waker(paths.root, 'watch');
      let running = true;
      const stop = (): void => {
        running = false;
        waker.close();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      // Keep the process alive while following (the watcher itself does not).
      const keepAlive = setInterval(() => undefined, 1 << 30);
      while (running) {
        await waker.wait(1000);
        print();
      }
      clearInterval(keepAlive);
      db.close();
    });
}

interface SendOptions {
  sender: string;
  kind: string;
  contentJson?: string;
  processAfter?: string;
  trigger: 0 | 1;
  platformId?: string;
  channelType?: string;
  threadId?: string;
}

function defaultContent(kind: string, text: string, sender: string): unknown {
  switch (kind) {
    case 'chat':
      return { text, sender };
    case 'chat-sdk':
      return { text, author: { userName: sender, fullName: sender } };
    case 'task':
      return { prompt: text };
    default:
      fail(`--kind ${kind} needs --content-json`);
  }
}

/** The paths of the session folder at `dir`, or a usage error saying how to make one. */
function sessionFolder(dir: string): ReturnType<typeof sessionPaths> {
  const paths = sessionPaths(dir);
  if (!fs.existsSync(paths.db))
    throw new PincerError('invalid-input', `${dir} is not a session folder (no session.db); create one with: pincer session create ${dir}`);
  return paths;
}

function parseSeq(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('must be a message seq (0, 1, 2, …)');
  return Number(value);
}

function parseTrigger(value: string): 0 | 1 {
  if (value !== '0' && value !== '1') throw new InvalidArgumentError('must be 0 or 1');
  return Number(value) as 0 | 1;
}

/** An outbound row with its content parsed, as one JSON line. */
export function outboundJson(row: OutboundRow): Record<string, unknown> {
  let content: unknown = row.content;
  try {
    content = JSON.parse(row.content);
  } catch {
    // keep the raw text: a row written by another tool may hold anything
  }
  return { ...row, content };
}

function fail(message: string): never {
  throw new PincerError('invalid-input', message);
}

/**
 * The login name, for `--sender`'s default. Every command is registered at start-up, so this must not throw: in a
 * container the runner's uid has no passwd entry and `os.userInfo()` fails with ENOENT.
 */
export function defaultSender(): string {
  try {
    return os.userInfo().username;
  } catch {
    // no passwd entry for this uid (containers): the environment's name will do
    return process.env.USER || 'user';
  }
}
