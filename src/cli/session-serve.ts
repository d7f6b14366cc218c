import type { Command } from 'commander';
import path from 'node:path';
import readline from 'node:readline';
import { describeIssues } from '../db/content.js';
import { unsafeFilesystem, serveSession, REFUSED_FILESYSTEMS } from '../host/session/serve.js';
import { LaunchDocumentSchema, type ReadyLine } from '../host/session/serve-protocol.js';
import { createLogger } from '../shared/log.js';

/**
 * `pincer session-serve <session folder>`: serve one session over HTTP for the host that launched it. The launch
 * document (bearer, epoch, settings, the runners' environment) comes as one JSON line on stdin — never on the command
 * line — and stdin stays open as the host's lifeline: when it closes (the host is gone), the session drains and the
 * process exits. The first stdout line says where it serves. SIGTERM: drain, then exit 0.
 */
export function registerSessionServeCommand(program: Command): void {
  program
    .command('session-serve <folder>')
    .description('serve one session folder over HTTP to the host that launched it (the launch document on stdin)')
    .action(async (folder: string) => {
      process.exitCode = await runSessionServe(path.resolve(folder));
    });
}

async function runSessionServe(folder: string): Promise<number> {
  const log = createLogger('session-serve');
  const lines = readline.createInterface({ input: process.stdin });
  const first = await new Promise<string | undefined>((resolve) => {
    lines.once('line', resolve);
    lines.once('close', () => resolve(undefined));
  });
  if (first === undefined) return fail('no launch document on stdin (the host writes one JSON line)');
  let raw: unknown;
  try {
    raw = JSON.parse(first);
  } catch {
    return fail('the launch document on stdin is not JSON');
  }
  const doc = LaunchDocumentSchema.safeParse(raw);
  if (!doc.success) return fail(`bad launch document: ${describeIssues(doc.error)}`);
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
  lines.once('close', () => void served.stop('the host closed the lifeline'));
  await served.closed;
  lines.close();
  return 0;
}

/** The refused file systems, and (PINCER_SESSION_REFUSE_FS: statfs types in hex) more, e.g. tmpfs to test the check. */
function refusedFilesystems(): Map<number, string> {
  const refused = new Map(REFUSED_FILESYSTEMS);
  for (const hex of (process.env.PINCER_SESSION_REFUSE_FS ?? '').split(',').filter(Boolean)) refused.set(Number.parseInt(hex, 16), `a refused file system (${hex})`);
  return refused;
}

function fail(message: string): number {
  process.stderr.write(`pincer session-serve: ${message}\n`);
  process.stdin.destroy(); // the lifeline is not needed: nothing was started
  return 2;
}
