import type Database from 'better-sqlite3';
import fs from 'node:fs';
import { openSessionDb } from '../../db/connection.js';
import { dbFileChange, type DbFileChange, type FileIdentity } from '../../db/db-file.js';
import { sessionPaths } from '../../db/layout.js';
import { Waker } from '../../db/wake.js';
import { errorMessage, type Logger } from '../../shared/log.js';
import { Sweeper } from './sweep.js';
import { checkSessionDatabase, UntrustedPathError } from '../untrusted-files.js';
import { Backoff } from '../../shared/backoff.js';

/** A failing tick waits 100 ms, then twice as long each time, up to 30 s. */
const TICK_BACKOFF_BASE_MS = 100;
const TICK_BACKOFF_MAX_MS = 30_000;

/**
 * The host's hold on one session: its own DB connection, a Waker on the session folder (any write by the runner or
 * the MCP server wakes the host at once; the timeout is only the periodic fallback), and a loop that runs the host's
 * tick — sweep, runner lifecycle, delivery — one at a time for this session.
 */
export class SessionSlot {
  /** the session's database; replaced when the file was lost and set up afresh (`replaceDb`). */
  db: Database.Database;
  /** the file `db` was opened from. */
  private identity: FileIdentity;
  readonly waker: Waker;
  sweeper: Sweeper;
  /** when the host last wrote to this session (a message accepted); idle time counts from the later of this and the runner's. */
  lastActivityAt = Date.now();
  /** someone asked for a runner (restart from the control page): start one on the next tick even with nothing due. */
  runnerWanted = false;
  /** something failed (a tick, a runner crashed): check the whole database file once on the next turn. */
  suspectDamage = false;
  private closed = false;
  private loop: Promise<void> | null = null;
  private stopPause: (() => void) | null = null;

  constructor(
    readonly session: { readonly id: string; readonly folder: string },
    private readonly log: Logger,
    opened: OpenedSessionDb,
    /** what it acknowledges survives a power loss (a served session): see `committed()`. */
    private readonly durable = false,
  ) {
    this.db = durably(opened.db, durable);
    this.identity = opened.identity;
    this.waker = new Waker(sessionPaths(session.folder).root, 'watch');
    this.sweeper = new Sweeper(this.db);
  }

  /** How the file at `session.db` differs from the one this slot opened (one lstat); undefined when it is the same. */
  dbFileChange(): DbFileChange | undefined {
    return dbFileChange(sessionPaths(this.session.folder).db, this.identity);
  }

  /** Use a new database (the old file was lost and set up afresh); the old connection is closed. */
  replaceDb(opened: OpenedSessionDb): void {
    if (this.db.open) this.db.close();
    this.db = durably(opened.db, this.durable);
    this.identity = opened.identity;
    this.sweeper = new Sweeper(this.db);
  }

  /**
   * Run `tick` now and after every change or `tick`'s returned wait, until `close()`. A tick that fails (a full disk,
   * a database that cannot be written) is retried after an exponential back-off that changes to the session folder
   * cannot cut short — the failing tick's own writes would otherwise wake it again at once and spin the CPU.
   */
  run(tick: (slot: SessionSlot) => Promise<number>): void {
    const backoff = new Backoff(TICK_BACKOFF_BASE_MS, TICK_BACKOFF_MAX_MS);
    this.loop = (async () => {
      while (!this.closed) {
        try {
          const waitMs = await tick(this);
          const ended = backoff.succeed();
          if (ended > 0) this.log.info(`session ${this.session.id}: recovered after ${ended} failed tick(s)`);
          if (this.closed) break;
          await this.waker.wait(waitMs);
        } catch (err) {
          const { delayMs, failures } = backoff.fail(errorMessage(err));
          this.log.error(`session ${this.session.id}: ${errorMessage(err)} (${failures} in a row; next try in ${delayMs} ms)`);
          if (this.closed) break;
          await this.pause(delayMs);
        }
      }
    })();
  }

  /** Sleep `ms`, ignoring wake-ups but not `close()`. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.stopPause = null;
        resolve();
      }, ms);
      this.stopPause = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  touch(): void {
    this.lastActivityAt = Date.now();
    this.waker.notify();
  }

  /**
   * A write is about to be acknowledged to the host. On a durable slot the connection commits with
   * `synchronous=FULL`, so the commit is on disk already: its log was synced before the commit was published, while
   * nothing else was writing the log (a fraction of a millisecond; syncing it afterwards, beside the runner's own
   * writes, took 5–8 ms here). A reader woken by that log write may have looked before the publication (which fires
   * no file event), so the database file's times are touched once more to wake it again at once (never through a
   * link). A session the host runs itself is not synced: its host keeps its own copy of what it sent.
   */
  committed(): void {
    if (!this.durable) return;
    const now = new Date();
    try {
      fs.lutimesSync(sessionPaths(this.session.folder).db, now, now);
    } catch (err) {
      // gone: the slot's next wake finds the file lost and sets it up afresh; the readers' own fallback wakes them
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }

  /** Stop the loop, after the tick in progress. */
  async stopLoop(): Promise<void> {
    this.closed = true;
    this.waker.close();
    this.stopPause?.();
    await this.loop;
  }

  async close(): Promise<void> {
    await this.stopLoop();
    if (this.db.open) this.db.close();
  }

  /** End the loop from inside its own tick (the session is being set aside): the database closes once the tick is over. */
  retire(): void {
    this.closed = true;
    this.waker.close();
    void this.loop?.then(() => this.db.open && this.db.close());
  }
}

function durably(db: Database.Database, durable: boolean): Database.Database {
  if (durable) db.pragma('synchronous = FULL');
  return db;
}

/** A session database as the host opened it, with the identity of the file it came from. */
export interface OpenedSessionDb {
  db: Database.Database;
  identity: FileIdentity;
}

/**
 * Open a session's database only if it is the session's own regular file (untrusted-files.ts), and confirm after
 * opening that the file checked is the file opened. Throws `UntrustedPathError` or `SessionDbError`; the host then
 * quarantines the session instead of failing.
 */
export function openSessionDbSafely(folder: string): Database.Database {
  return openSessionDbChecked(folder).db;
}

/** `openSessionDbSafely`, also returning the identity of the file opened (the slot compares it at each wake). */
export function openSessionDbChecked(folder: string): OpenedSessionDb {
  const before = checkSessionDatabase(folder);
  const db = openSessionDb(sessionPaths(folder).db);
  try {
    const after = checkSessionDatabase(folder);
    if (after.dev !== before.dev || after.ino !== before.ino) throw new UntrustedPathError('escaped', 'session.db was replaced while it was opened');
  } catch (err) {
    db.close();
    throw err;
  }
  return { db, identity: before };
}
