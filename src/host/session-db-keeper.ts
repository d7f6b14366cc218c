import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { SessionDbError } from '../db/connection.js';
import { describeDbFileChange, isDamagedDbError } from '../db/db-file.js';
import { sessionPaths } from '../db/layout.js';
import { errorMessage, type Logger } from '../shared/log.js';
import type { CentralStore } from './central-db/store.js';
import type { SessionRecord } from './central-db/types.js';
import { conversationOf, type Delivery } from './delivery.js';
import type { InboundCopies } from './inbound-copies.js';
import type { RunnerSupervisor } from './runners.js';
import type { SessionDirectory } from './sessions.js';
import { openSessionDbChecked, type OpenedSessionDb, type SessionSlot } from './session-slot.js';
import type { ConversationRef } from './types.js';
import { isUntrustedPathError } from './untrusted-files.js';

/**
 * A session's database lost under the host: `session.db` deleted, another file moved over it, a page overwritten. A
 * connection keeps the file it opened, so without a check host and runner would go on writing into a file nobody
 * will read again. Each wake of a session's loop compares what is at the path with the file opened (one lstat); a
 * damaged file shows as SQLite's `SQLITE_CORRUPT`/`SQLITE_NOTADB`. Then the host stops the runner, sends out what the
 * agent had written, keeps whatever is at the path aside (`session.db.<why>-<time>`), creates a new empty database,
 * writes into it every message it accepted that is not done (its own copies, `InboundCopies`), forgets the provider's
 * conversation, and tells the chat. Something that is not a regular file at the path (a link) is never opened: that
 * session is quarantined, as at start-up. One session's trouble never stops the host or its other sessions.
 */
export type DbTroubleKind = 'deleted' | 'replaced' | 'damaged';

interface Trouble {
  kind: DbTroubleKind;
  /** "was deleted", "is damaged (database disk image is malformed)". */
  detail: string;
}

export interface SessionDbKeeperDeps {
  store: CentralStore;
  copies: InboundCopies;
  supervisor: RunnerSupervisor;
  delivery: Delivery;
  sessions: SessionDirectory;
  log: Logger;
  /** stop serving the session (a link or a non-file at `session.db`); the slot's loop is ended by the caller. */
  quarantine(slot: SessionSlot, reason: string): Promise<void>;
}

export class SessionDbKeeper {
  /** notices found before the channels started (at host start-up); sent by `ready()`. */
  private queued: { session: SessionRecord; conversation: ConversationRef; text: string }[] | null = [];

  constructor(private readonly deps: SessionDbKeeperDeps) {}

  /**
   * Open a session's database for its slot. A missing or damaged file is set up afresh; anything else that makes it
   * unsafe (a link) throws, and the host quarantines the session.
   */
  open(session: SessionRecord): OpenedSessionDb {
    let trouble: Trouble;
    try {
      return openSessionDbChecked(session.folder);
    } catch (err) {
      if (isUntrustedPathError(err, 'missing')) trouble = { kind: 'deleted', detail: 'is missing' };
      else if (isDamagedDbError(err)) trouble = { kind: 'damaged', detail: `is damaged (${sqliteMessage(err)})` };
      else throw err;
    }
    try {
      return this.setUpAfresh(session, trouble);
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
      await this.deps.quarantine(slot, `session.db ${describeDbFileChange(change)}`);
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

  /** The channels are up: send the notices found while starting. */
  async ready(): Promise<void> {
    const queued = this.queued ?? [];
    this.queued = null;
    for (const notice of queued) await this.deps.delivery.notify({ session: notice.session }, notice.conversation, notice.text);
  }

  private async recover(slot: SessionSlot, trouble: Trouble): Promise<void> {
    const { session } = slot;
    this.deps.log.error(`session ${session.id}: session.db ${trouble.detail}; stopping its runner and setting up a new database`);
    await this.deps.supervisor.kill(session.id);
    // What the agent wrote before the loss still goes out, and messages answered need not be sent again: the old
    // connection still reads the file it opened (unless that file is the damaged one).
    const group = this.deps.store.getAgentGroup(session.agentGroupId);
    if (group) await this.deps.delivery.deliverSession({ db: slot.db, session, group }).catch(() => undefined);
    try {
      this.deps.copies.prune(session.id, slot.db, true);
    } catch {
      // unreadable: every kept copy is sent again (at-least-once)
    }
    slot.replaceDb(this.setUpAfresh(session, trouble, slot.db));
  }

  /**
   * Keep aside whatever is at `session.db` (and its `-wal`, `-shm`), create a new database in its place, write the
   * host's copies of the messages not done into it, and tell the chat. `old` is closed first: SQLite removes the
   * `-wal` and `-shm` it used when the last connection closes, and they must not be the new database's.
   */
  private setUpAfresh(session: SessionRecord, trouble: Trouble, old?: Database.Database): OpenedSessionDb {
    if (old?.open) old.close();
    const folderGone = !fs.existsSync(session.folder);
    const aside = folderGone ? undefined : keepAside(session.folder, trouble.kind);
    // The whole folder deleted: made again as at provisioning. Else the file is created exclusively: a link planted
    // at the path in between is refused, never followed.
    if (folderGone) this.deps.sessions.restoreFolder(session);
    else fs.closeSync(fs.openSync(sessionPaths(session.folder).db, fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_RDWR, 0o600));
    const opened = openSessionDbChecked(session.folder);
    const resent = this.deps.copies.resend(session.id, opened.db);
    // The provider's own conversation went with the old database's history: the agent starts afresh.
    this.deps.store.setProviderSessionId(session.id, null);
    const group = this.deps.store.getAgentGroup(session.agentGroupId);
    const current = this.deps.store.getSession(session.id);
    if (group && current) this.deps.sessions.publishConfig(current, group);
    this.deps.log.warn(
      `session ${session.id}: new session.db set up${aside ? ` (the old one kept as ${aside})` : ''}; ${resent.length} accepted message(s) not done yet written into it again`,
    );
    const text =
      `This conversation's session database ${trouble.detail}${aside ? ` (kept as ${aside} in the session folder)` : ''}. ` +
      `A new one was set up: the agent starts afresh, without the earlier conversation or the tasks it had scheduled.` +
      (resent.length > 0 ? ` ${resent.length} message(s) not answered yet were given to it again.` : '');
    const conversations = new Map<string, ConversationRef>();
    for (const row of [{ channel_type: null, platform_id: null, thread_id: null }, ...resent]) {
      const conversation = conversationOf({ session }, row);
      conversations.set(`${conversation.channelType}\n${conversation.platformId}\n${conversation.threadId ?? ''}`, conversation);
    }
    for (const conversation of conversations.values()) this.announce(session, conversation, text);
    return opened;
  }

  private announce(session: SessionRecord, conversation: ConversationRef, text: string): void {
    if (this.queued) this.queued.push({ session, conversation, text });
    else void this.deps.delivery.notify({ session }, conversation, text);
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
