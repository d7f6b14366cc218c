import type Database from 'better-sqlite3';
import { prepared } from '../db/connection.js';
import { getInbound, insertInbound } from '../db/messages.js';
import type { InboundRow } from '../db/types.js';
import { isoNow } from '../shared/time.js';

/**
 * The host's own copy of each inbound message it accepted (`202`) into a session, in the central DB (`inbound_copies`)
 * until the session is done with it. The session DB is a file in the agent's folder: deleted, replaced or damaged, it
 * takes its pending messages with it. These copies are what the host writes into the new one, so a message the host
 * accepted is answered all the same.
 *
 * A message is done once its row is `completed` or `failed` (or was pruned away) and nothing the agent wrote waits
 * for delivery — an answer still in the lost file would be lost with it, so until then the copy stays and the message
 * is sent again (at-least-once: its answer may come twice, never not at all).
 */
/** Few copies are checked on every tick (so few are sent twice after a loss); many, at most once a second. */
const PRUNE_EVERY_TICK_UP_TO = 100;
const PRUNE_EVERY_MS = 1000;

export class InboundCopies {
  /** per session: when its copies were last checked, and how many were left (0: nothing to check until `keep`). */
  private readonly pruned = new Map<string, { at: number; left: number }>();

  constructor(private readonly central: Database.Database) {}

  /** Keep a copy of the row the host just wrote into the session: read back, so what is re-sent is what was stored. */
  keep(sessionId: string, sessionDb: Database.Database, messageId: string): void {
    const row = getInbound(sessionDb, messageId);
    if (!row) return;
    prepared(this.central, 'INSERT OR REPLACE INTO inbound_copies (session_id, message_id, row, created_at) VALUES (?, ?, ?, ?)').run(
      sessionId,
      messageId,
      JSON.stringify(row),
      isoNow(),
    );
    const pruned = this.pruned.get(sessionId);
    if (pruned) pruned.left += 1;
  }

  /** Drop the copies of the messages `sessionDb` is done with (throttled when there are many, unless `now`). */
  prune(sessionId: string, sessionDb: Database.Database, now = false): void {
    const last = this.pruned.get(sessionId);
    if (!now && last && (last.left === 0 || (last.left > PRUNE_EVERY_TICK_UP_TO && Date.now() - last.at < PRUNE_EVERY_MS))) return;
    const ids = this.ids(sessionId);
    const done = ids.length > 0 ? doneIn(sessionDb, ids) : [];
    if (done.length > 0) {
      const drop = prepared(this.central, 'DELETE FROM inbound_copies WHERE session_id = ? AND message_id = ?');
      this.central.transaction(() => done.forEach((id) => drop.run(sessionId, id)))();
    }
    this.pruned.set(sessionId, { at: Date.now(), left: ids.length - done.length });
  }

  /** How many copies the session has (messages accepted and not known to be done). */
  count(sessionId: string): number {
    return (prepared(this.central, 'SELECT count(*) AS n FROM inbound_copies WHERE session_id = ?').get(sessionId) as { n: number }).n;
  }

  /**
   * Write every copy of the session into `freshDb` (a new, empty session DB) as a pending message with its id, in the
   * order the host accepted them. Returns the rows written.
   */
  resend(sessionId: string, freshDb: Database.Database): InboundRow[] {
    const rows = (prepared(this.central, 'SELECT row FROM inbound_copies WHERE session_id = ? ORDER BY rowid').all(sessionId) as { row: string }[]).map(
      (r) => JSON.parse(r.row) as InboundRow,
    );
    freshDb.transaction(() => {
      for (const row of rows) {
        insertInbound(freshDb, {
          id: row.id,
          kind: row.kind,
          content: row.content,
          timestamp: row.timestamp,
          processAfter: row.process_after,
          recurrence: row.recurrence,
          seriesId: row.series_id,
          trigger: row.trigger === 0 ? 0 : 1,
          channelType: row.channel_type,
          platformId: row.platform_id,
          threadId: row.thread_id,
          traceContext: row.trace_context ?? null,
        });
      }
    }).immediate();
    return rows;
  }

  private ids(sessionId: string): string[] {
    return (prepared(this.central, 'SELECT message_id FROM inbound_copies WHERE session_id = ?').all(sessionId) as { message_id: string }[]).map((r) => r.message_id);
  }
}

/** Of `ids`, the messages `db` is done with: finished (or pruned away), and nothing undelivered in the session. */
function doneIn(db: Database.Database, ids: string[]): string[] {
  if (prepared(db, 'SELECT 1 FROM messages_out WHERE delivered_at IS NULL AND delivery_error IS NULL LIMIT 1').get()) return [];
  return (
    prepared(
      db,
      `SELECT c.value AS id FROM json_each(?) c
       WHERE NOT EXISTS (SELECT 1 FROM messages_in m WHERE m.id = c.value AND m.status NOT IN ('completed', 'failed'))`,
    ).all(JSON.stringify(ids)) as { id: string }[]
  ).map((r) => r.id);
}
