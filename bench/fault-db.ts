import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { count, cpuSampler, replies, killRunnersOf, post, skipped, sleep, startHost, stop, waitAllAnswered, type FaultRow } from './fault-host.js';

/**
 * Fault-suite scenarios on one session's database while messages stream into two conversations (the faulted one and
 * another that must go on): the file made read-only for 3 s, deleted, or a page of it overwritten. A message the host
 * refused while the fault lasted (an error, not 202) is not counted as sent: it was never accepted.
 */
export type DbFault = 'read-only' | 'deleted' | 'damaged';

const LABELS: Record<DbFault, string> = {
  'read-only': 'read-only session DB (3 s, chattr +i)',
  deleted: 'session DB deleted',
  damaged: 'session DB page overwritten',
};

/** A read-only file that holds for root too: `chattr +i` (root ignores file modes). Why it cannot be used, or undefined. */
export const readOnlySkip: string | undefined = (() => {
  if (process.getuid?.() !== 0) return 'needs root for chattr +i (file modes alone do not stop a process that has the file open)';
  const probe = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-chattr-probe-')), 'f');
  fs.writeFileSync(probe, '');
  const ok = spawnSync('chattr', ['+i', probe]).status === 0;
  if (ok) spawnSync('chattr', ['-i', probe]);
  fs.rmSync(path.dirname(probe), { recursive: true, force: true });
  return ok ? undefined : 'chattr +i is not available here (no chattr, or a file system without the immutable flag)';
})();

export async function dbFaultScenario(fault: DbFault, messages: number): Promise<FaultRow> {
  if (fault === 'read-only' && readOnlySkip) return skipped(LABELS[fault], readOnlySkip);
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pincer-fault-db-'));
  const host = await startHost(home);
  const conversations = ['db-hit', 'db-other'];
  const accepted: string[] = [];
  const cpu = cpuSampler(() => host.child.pid);
  let file: string | undefined;
  let undo: (() => void) | undefined;
  let faultAt = 0;
  let faultEnded: number | undefined;
  // A one-off fault (deleted, damaged) has recovered once an answer comes back to the faulted conversation for a
  // message sent after it: watched while the stream goes on.
  let answeredAfterFault: number | undefined;
  const firstAfter: string[] = [];
  const watch = setInterval(() => {
    if (firstAfter.length === 0 || answeredAfterFault !== undefined) return;
    void replies(host.port, 'db-hit')
      .then((texts) => {
        if (answeredAfterFault === undefined && texts.some((t) => t.includes(firstAfter[0]!))) answeredAfterFault = Date.now();
      })
      .catch(() => undefined);
  }, 50);
  try {
    for (let i = 0; i < messages; i++) {
      const marker = `[${fault}-${String(i).padStart(4, '0')}]`;
      const conversation = conversations[i % conversations.length]!;
      const sessionId = await post(host.port, conversation, `${marker} hello`);
      if (sessionId !== undefined) accepted.push(marker);
      if (sessionId !== undefined && faultAt > 0 && !undo && conversation === 'db-hit' && firstAfter.length === 0) firstAfter.push(marker);
      if (sessionId && conversation === 'db-hit') file ??= path.join(home, 'sessions', sessionId, 'session.db');
      if (i === Math.floor(messages / 3) && file) {
        undo = apply(fault, file);
        faultAt = Date.now();
        if (!undo) faultEnded = faultAt;
      }
      // A fault that lasts is lifted after two thirds of the stream, and no sooner than 3 s after it began.
      if (undo && i >= Math.floor((2 * messages) / 3) && Date.now() - faultAt >= 3000) faultEnded = lift();
      await sleep(20);
    }
    if (undo) {
      await sleep(Math.max(0, faultAt + 3000 - Date.now()));
      faultEnded = lift();
    }
    const done = await waitAllAnswered(() => host.port, conversations, accepted, 60_000);
    const allAnswered = Date.now();
    const recoveredAt = fault === 'read-only' ? allAnswered : (answeredAfterFault ?? allAnswered);
    const recoveryMs = done && faultEnded !== undefined ? recoveredAt - faultEnded : null;
    const counts = await count(host.port, conversations, accepted);
    if (counts.lost > 0 && process.env.FAULT_DEBUG) process.stderr.write(`${host.stderr()}\nlost: ${await lostMarkers(host.port, conversations, accepted)}\n`);
    const exited = host.child.exitCode;
    return {
      scenario: LABELS[fault],
      sent: accepted.length,
      ...counts,
      maxHostCpu: cpu.max(),
      recoveryMs,
      ...(exited !== null ? { note: `host exited ${exited}` } : {}),
    };
  } finally {
    clearInterval(watch);
    if (undo) lift();
    cpu.stop();
    await stop(host);
    killRunnersOf(home);
    if (!process.env.FAULT_DEBUG) fs.rmSync(home, { recursive: true, force: true });
  }

  function lift(): number {
    undo?.();
    undo = undefined;
    return Date.now();
  }
}

/** Put the fault on `file`; returns how to lift it when it lasts (read-only), or undefined for a one-off. */
function apply(fault: DbFault, file: string): (() => void) | undefined {
  if (fault === 'deleted') {
    fs.rmSync(file);
    return undefined;
  }
  if (fault === 'damaged') {
    overwriteMessagesPage(file);
    return undefined;
  }
  // The database and its WAL (where every write goes first) immutable: writes fail with EPERM, even for root.
  const files = [file, `${file}-wal`].filter((f) => fs.existsSync(f));
  spawnSync('chattr', ['+i', ...files]);
  return () => void spawnSync('chattr', ['-i', ...files]);
}

/**
 * Overwrite the root page of `messages_in` — the page every read of the message table goes through — with garbage,
 * after folding the WAL into the file so that the page is read from the file and not from the WAL.
 */
export function overwriteMessagesPage(file: string): void {
  const db = new Database(file, { timeout: 10_000 });
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const { rootpage } = db.prepare(`SELECT rootpage FROM sqlite_schema WHERE name = 'messages_in'`).get() as { rootpage: number };
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (rootpage - 1) * pageSize);
  fs.closeSync(fd);
  // Then one write elsewhere (the header page, its value unchanged), as any later commit would: it changes the WAL, so
  // every open connection drops the pages it had cached and reads the damaged one from the file. Without it a
  // connection that cached the good page between the checkpoint and the overwrite would never see the damage.
  const after = new Database(file, { timeout: 10_000 });
  after.pragma(`user_version = ${after.pragma('user_version', { simple: true }) as number}`);
  after.close();
}

async function lostMarkers(port: number, conversations: string[], accepted: string[]): Promise<string> {
  const all = (await Promise.all(conversations.map((c) => replies(port, c)))).flat();
  return accepted.filter((m) => !all.some((t) => t.includes(m))).join(' ');
}
