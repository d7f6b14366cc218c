import type Database from 'better-sqlite3';
import { openSessionDb } from '../db/connection.js';
import { sessionPaths } from '../db/layout.js';
import { Waker } from '../db/wake.js';
import { errorMessage, type Logger } from '../shared/log.js';
import type { SessionRecord } from './central-db/types.js';
import { Sweeper } from './sweep.js';
import { checkSessionDatabase, UntrustedPathError } from './untrusted-files.js';
import type { ConversationRef } from './types.js';
import { Backoff } from '../shared/backoff.js';

/** A failing tick waits 100 ms, then twice as long each time, up to 30 s. */
const TICK_BACKOFF_BASE_MS = 100;
const TICK_BACKOFF_MAX_MS = 30_000;

/**
 * The host's hold on one session: its own DB connection, a Waker on the session folder (any write by the runner or
 * the MCP server wakes the host at once; the timeout is only the periodic fallback), and a loop that runs the host's
 * tick — sweep, runner lifecycle, delivery — one at a time for this session.
 */
export class SessionSlot {
  readonly db: Database.Database;
  readonly waker: Waker;
  readonly sweeper: Sweeper;
  /** when the host last wrote to this session (a message accepted); idle time counts from the later of this and the runner's. */
  lastActivityAt = Date.now();
  /** the conversation shown as "agent is typing" while the runner is busy, if any. */
  typingIn: ConversationRef | null = null;
  /** someone asked for a runner (restart from the control page): start one on the next tick even with nothing due. */
  runnerWanted = false;
  private closed = false;
  private loop: Promise<void> | null = null;
  private stopPause: (() => void) | null = null;

  constructor(
    readonly session: SessionRecord,
    private readonly log: Logger,
  ) {
    const paths = sessionPaths(session.folder);
    this.db = openSessionDbSafely(session.folder);
    this.waker = new Waker(paths.root, 'watch');
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
}

/**
 * Open a session's database only if it is the session's own regular file (untrusted-files.ts), and confirm after
 * opening that the file checked is the file opened. Throws `UntrustedPathError` or `SessionDbError`; the host then
 * quarantines the session instead of failing.
 */
export function openSessionDbSafely(folder: string): Database.Database {
  const before = checkSessionDatabase(folder);
  const db = openSessionDb(sessionPaths(folder).db);
  try {
    const after = checkSessionDatabase(folder);
    if (after.dev !== before.dev || after.ino !== before.ino) throw new UntrustedPathError('escaped', 'session.db was replaced while it was opened');
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}
