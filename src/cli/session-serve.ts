import type { Command } from 'commander';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { describeIssues } from '../db/content.js';
import { unsafeFilesystem, serveSession, REFUSED_FILESYSTEMS } from '../host/session/serve.js';
import { LaunchDocumentSchema, type ReadyLine } from '../host/session/serve-protocol.js';
import { createLogger } from '../shared/log.js';
import { readSetting } from '../shared/settings-load.js';

/**
 * `pincer session-serve <session folder>`: serve one session over HTTP for the host that launched it. The launch
 * document (bearer, epoch, settings, the runners' environment) comes as one JSON line on stdin — never on the command
 * line — and stdin stays open as the host's lifeline: when it closes (the host is gone), the session drains and the
 * process exits. The first stdout line says where it serves. SIGTERM: drain, then exit 0.
 *
 * In a pod (`PINCER_RUNNER=kubernetes`) there is no stdin: `--launch-file` names the document (the launch's Secret,
 * mounted read-only), the paths of the pod come as options, and the only lifeline is the orphan timer.
 */
export function registerSessionServeCommand(program: Command): void {
  program
    .command('session-serve <folder>')
    .description('serve one session folder over HTTP to the host that launched it (the launch document on stdin)')
    .option('--launch-file <path>', 'read the launch document from this file instead of stdin (no stdin lifeline then)')
    .option('--listen <host:port>', "where to listen, instead of the document's")
    .option('--group-dir <path>', "the agent group's folder, instead of the document's")
    .option('--global-dir <path>', 'the global folder, instead of the document’s')
    .option('--log-file <path>', 'the runner log, instead of the document’s')
    .action(async (folder: string, options: ServeOptions) => {
      process.exitCode = await runSessionServe(path.resolve(folder), options);
    });
}

interface ServeOptions {
  launchFile?: string;
  listen?: string;
  groupDir?: string;
  globalDir?: string;
  logFile?: string;
}

async function runSessionServe(folder: string, options: ServeOptions): Promise<number> {
  const log = createLogger('session-serve');
  const lines = options.launchFile ? null : readline.createInterface({ input: process.stdin });
  let first: string | undefined;
  if (options.launchFile) {
    try {
      first = fs.readFileSync(options.launchFile, 'utf8');
    } catch (err) {
      return fail(`cannot read the launch document ${options.launchFile}: ${(err as Error).message}`);
    }
  } else {
    first = await new Promise<string | undefined>((resolve) => {
      lines!.once('line', resolve);
      lines!.once('close', () => resolve(undefined));
    });
  }
  const where = options.launchFile ?? 'stdin';
  if (first === undefined) return fail('no launch document on stdin (the host writes one JSON line)');
  let raw: unknown;
  try {
    raw = JSON.parse(first);
  } catch {
    // the reply names what was wrong; the parser's own text adds nothing for the launcher
    return fail(`the launch document on ${where} is not JSON`);
  }
  const doc = LaunchDocumentSchema.safeParse(raw);
  if (!doc.success) return fail(`bad launch document: ${describeIssues(doc.error)}`);
  if (options.listen) doc.data.listen = options.listen;
  if (options.groupDir) doc.data.launch.groupDir = path.resolve(options.groupDir);
  if (options.globalDir) doc.data.launch.globalDir = path.resolve(options.globalDir);
  if (options.logFile) doc.data.launch.logFile = path.resolve(options.logFile);
  if (options.launchFile) {
    // A fresh volume holds nothing yet: the session folder and the pod's own folders are made on it.
    for (const dir of [folder, doc.data.launch.groupDir, doc.data.launch.globalDir, path.dirname(doc.data.launch.logFile)])
      fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  let unsafe: string | undefined;
  try {
    unsafe = unsafeFilesystem(folder, refusedFilesystems());
  } catch (err) {
    return fail(`cannot use ${folder}: ${(err as Error).message}`);
  }
  if (unsafe) return fail(unsafe);
  const served = await serveSession(folder, doc.data, log);
  const ready: ReadyLine = { ready: true, url: served.url, pid: process.pid };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  process.once('SIGTERM', () => void served.stop('SIGTERM'));
  process.once('SIGINT', () => void served.stop('SIGINT'));
  lines?.once('close', () => void served.stop('the host closed the lifeline'));
  await served.closed;
  lines?.close();
  return 0;
}

/** The refused file systems, and (PINCER_SESSION_REFUSE_FS: statfs types in hex) more, e.g. tmpfs to test the check. */
function refusedFilesystems(): Map<number, string> {
  const refused = new Map(REFUSED_FILESYSTEMS);
  for (const hex of readSetting(process.env, 'PINCER_SESSION_REFUSE_FS')) refused.set(Number.parseInt(hex, 16), `a refused file system (${hex})`);
  return refused;
}

function fail(message: string): number {
  process.stderr.write(`pincer session-serve: ${message}\n`);
  process.stdin.destroy(); // the lifeline is not needed: nothing was started
  return 2;
}
