import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { SessionDbError } from '../../db/connection.js';
import { describeDbFileChange, isDamagedDbError } from '../../db/db-file.js';
import { createSessionFolder, sessionPaths } from '../../db/layout.js';
import { allUndelivered, insertOutboundCopies, unfinishedIds } from '../../db/session-queries.js';
import type { OutboundRow } from '../../db/types.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import type { RunnerSupervisor } from './runners.js';
import type { SessionEvent } from './port.js';
import { openSessionDbChecked, type OpenedSessionDb, type SessionSlot } from './slot.js';
import { isUntrustedPathError } from '../untrusted-files.js';

/**
 * A session's database lost under its engine: `session.db` deleted, another file moved over it, a page overwritten. A
 * connection keeps the file it opened, so without a check host and runner would go on writing into a file nobody
 * will read again. Each wake of a session's loop compares what is at the path with the file opened (one lstat); a
 * damaged file shows as SQLite's `SQLITE_CORRUPT`/`SQLITE_NOTADB`. Then the engine stops the runner, keeps whatever is
 * at the path aside (`session.db.<why>-<time>`), creates a new empty database, copies into it what the agent had
 * written and nobody delivered (from its own connection, never from a file put in its place), forgets the provider's
 * conversation, and emits a `reset` event: the host writes every message it accepted that is not done into the new
 * database again (its inbox) and tells the chat. Something that is not a regular file at the path (a link) is never
 * opened: the session is quarantined. One session's trouble never stops the host or its other sessions.
 */
export type DbTroubleKind = 'deleted' | 'replaced' | 'damaged';

interface Trouble {
  kind: DbTroubleKind;
  /** "was deleted", "is damaged (database disk image is malformed)". */
  detail: string;
}

export interface SessionDbKeeperDeps {
  supervisor: RunnerSupervisor;
  log: Logger;
  /** make the session folder again as at provisioning (it was deleted); default: the bare layout. */
  restoreFolder?: () => void;
  /** tell the host: `reset` (a new database), `quarantined` (a link or a non-file at `session.db`). */
  emit(event: SessionEvent): void;
}

export class SessionDbKeeper {
  constructor(private readonly deps: SessionDbKeeperDeps) {}

  /**
   * Open a session's database. A missing or damaged file is set up afresh; anything else that makes it unsafe (a
   * link) throws, and the session is quarantined.
   */
  open(session: { id: string; folder: string }): OpenedSessionDb {
    let trouble: Trouble;
    try {
      return openSessionDbChecked(session.folder);
    } catch (err) {
      if (isUntrustedPathError(err, 'missing')) trouble = { kind: 'deleted', detail: 'is missing' };
      else if (isDamagedDbError(err)) trouble = { kind: 'damaged', detail: `is damaged (${sqliteMessage(err)})` };
      else throw err;
    }
    try {
      return this.setUpAfresh(session, trouble, null);
    } catch (err) {
      throw new SessionDbError('unreadable', `session.db ${trouble.detail} and a new one could not be set up: ${errorMessage(err)}`, { cause: err });
    }
  }

  /** One turn of a session's loop: check its database first, and recover instead of `tick` when it was lost. */
  async guard(slot: SessionSlot, tick: () => Promise<number>): Promise<number> {
    const change = slot.dbFileChange();
    let trouble: Trouble | undefined;
    if (change?.kind === 'not-regular') {
      await this.deps.supervisor.kill(slot.session.id);
      this.deps.emit({ type: 'quarantined', reason: `session.db ${describeDbFileChange(change)}` });
      return 1;
    }
    if (change) trouble = { kind: change.kind, detail: describeDbFileChange(change) };
    else if (slot.suspectDamage) {
      slot.suspectDamage = false;
      trouble = damageFound(slot.db);
    }
    if (!trouble) {
      try {
        return await tick();
      } catch (err) {
        // Another failure (a full disk, a busy lock) backs off; the next turn checks the whole file once.
        if (!isDamagedDbError(err)) {
          slot.suspectDamage = true;
          throw err;
        }
        trouble = { kind: 'damaged', detail: `is damaged (${sqliteMessage(err)})` };
      }
    }
    await this.recover(slot, trouble);
    return 1;
  }

  private async recover(slot: SessionSlot, trouble: Trouble): Promise<void> {
    const { session } = slot;
    this.deps.log.error(`session ${session.id}: session.db ${trouble.detail}; stopping its runner and setting up a new database`);
    await this.deps.supervisor.kill(session.id);
    // The old connection still reads the file it opened (unless that file is the damaged one): what the agent wrote
    // and nobody delivered goes into the new database, and the messages it had finished need not be sent again.
    let kept: { undelivered: OutboundRow[]; unfinished: string[] } | null = null;
    if (trouble.kind !== 'damaged') {
      try {
        kept = { undelivered: allUndelivered(slot.db), unfinished: unfinishedIds(slot.db) };
      } catch {
        kept = null; // unreadable after all: every message the host holds is sent again (at-least-once)
      }
    }
    slot.replaceDb(this.setUpAfresh(session, trouble, kept, slot.db));
  }

  /**
   * Keep aside whatever is at `session.db` (and its `-wal`, `-shm`), create a new database in its place, and tell the
   * host. `old` is closed first: SQLite removes the `-wal` and `-shm` it used when the last connection closes, and
   * they must not be the new database's.
   */
  private setUpAfresh(
    session: { id: string; folder: string },
    trouble: Trouble,
    kept: { undelivered: OutboundRow[]; unfinished: string[] } | null,
    old?: Database.Database,
  ): OpenedSessionDb {
    if (old?.open) old.close();
    const folderGone = !fs.existsSync(session.folder);
    const aside = folderGone ? undefined : keepAside(session.folder, trouble.kind);
    // The whole folder deleted: made again as at provisioning. Else the file is created exclusively: a link planted
    // at the path in between is refused, never followed.
    if (folderGone) (this.deps.restoreFolder ?? (() => createSessionFolder(session.folder)))();
    else fs.closeSync(fs.openSync(sessionPaths(session.folder).db, fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_RDWR, 0o600));
    const opened = openSessionDbChecked(session.folder);
    insertOutboundCopies(opened.db, kept?.undelivered ?? []);
    this.deps.log.warn(`session ${session.id}: new session.db set up${aside ? ` (the old one kept as ${aside})` : ''}`);
    const text =
      `This conversation's session database ${trouble.detail}${aside ? ` (kept as ${aside} in the session folder)` : ''}. ` +
      `A new one was set up: the agent starts afresh, without the earlier conversation or the tasks it had scheduled.`;
    this.deps.emit({ type: 'reset', text, unfinished: kept?.unfinished ?? null });
    return opened;
  }
}

/**
 * Rename `session.db` to `session.db.<kind>-<time>` (a rename moves a link itself and never follows it). Its `-wal`
 * and `-shm` go with it when it is the damaged file itself; after a deletion or a replacement they are the lost
 * database's leftovers — useless without it, and SQLite would read them as part of whatever file bore the name next —
 * so they are removed. Returns the new name, or undefined when nothing was at the path.
 */
function keepAside(folder: string, kind: DbTroubleKind): string | undefined {
  const file = sessionPaths(folder).db;
  const name = `session.db.${kind}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const aside = path.join(path.dirname(file), name);
  const kept = renameIfThere(file, aside);
  for (const suffix of ['-wal', '-shm']) {
    if (kind === 'damaged') renameIfThere(`${file}${suffix}`, `${aside}${suffix}`);
    else fs.rmSync(`${file}${suffix}`, { force: true });
  }
  return kept ? name : undefined;
}

function renameIfThere(from: string, to: string): boolean {
  try {
    fs.renameSync(from, to);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/**
 * `PRAGMA quick_check` over the whole file: a damaged page anywhere, even one the host's own queries never read (a
 * runner that crashed on it, a tick that failed). Reads every page once, so it runs only when something failed.
 */
function damageFound(db: Database.Database): Trouble | undefined {
  try {
    const result = db.pragma('quick_check(1)', { simple: true });
    return result === 'ok' ? undefined : { kind: 'damaged', detail: `is damaged (${String(result)})` };
  } catch (err) {
    if (!isDamagedDbError(err)) return undefined; // cannot check now (busy, closed): the tick's own failure shows
    return { kind: 'damaged', detail: `is damaged (${sqliteMessage(err)})` };
  }
}

/** The SQLite message under a wrapping error ("database disk image is malformed"). */
function sqliteMessage(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? cause.message : errorMessage(err);
}
