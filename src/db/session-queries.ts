import type Database from 'better-sqlite3';
import { isoNow } from '../shared/time.js';
import { prepared } from './connection.js';
import { parseInboundContent } from './content.js';
import { findBySeq, insertInbound } from './messages.js';
import { CANCELLED_TASK } from './tasks.js';
import type { InboundRow, OutboundRow } from './types.js';

/**
 * What the session port asks of a session's database (src/host/session): every query the host's side of a session
 * needs, here on the database floor, so neither the host nor `pincer session-serve` holds SQL of its own.
 */

/** An open message: in work, due, or waiting for a retry; a task scheduled for later does not keep a chat open. */
const OPEN_MESSAGE = `trigger = 1 AND (status = 'processing' OR (status = 'pending'
  AND (process_after IS NULL OR tries > 0 OR julianday(process_after) <= julianday('now'))))`;

const DUE_NOW = `status = 'pending' AND trigger = 1 AND (process_after IS NULL OR julianday(process_after) <= julianday(@now))
  AND NOT (kind = 'system' AND CASE WHEN json_valid(content)
    THEN coalesce(json_extract(content, '$.type') = 'question_response', 0) ELSE 0 END)`;

/** Counts and times the host shows and decides by. */
export interface SessionCounts {
  open: number;
  pending: number;
  undelivered: number;
  lastError: string | null;
  nextDueAt: string | null;
  /** the newest `turn_usage` id (0: none): the host reads usage rows only when it grew. */
  lastUsageId: number;
}

export function sessionCounts(db: Database.Database): SessionCounts {
  const row = prepared(
    db,
    `SELECT
       (SELECT count(*) FROM messages_in WHERE ${OPEN_MESSAGE}) AS open,
       (SELECT count(*) FROM messages_in WHERE status IN ('pending', 'processing')) AS pending,
       (SELECT count(*) FROM messages_out WHERE delivered_at IS NULL AND delivery_error IS NULL) AS undelivered,
       (SELECT last_error FROM messages_in WHERE last_error IS NOT NULL AND status IN ('pending', 'processing', 'failed')
          AND NOT ${CANCELLED_TASK} ORDER BY status_changed DESC, seq DESC LIMIT 1) AS lastError,
       (SELECT process_after FROM messages_in WHERE status = 'pending' AND trigger = 1 AND process_after IS NOT NULL
          ORDER BY julianday(process_after) LIMIT 1) AS nextDueAt,
       (SELECT coalesce(max(id), 0) FROM turn_usage) AS lastUsageId`,
  ).get() as SessionCounts;
  return row;
}

/** Outbound rows waiting for delivery with `seq > afterSeq`, oldest first. */
export function undeliveredRows(db: Database.Database, afterSeq: number, limit = 200): OutboundRow[] {
  return prepared(db, `SELECT * FROM messages_out WHERE delivered_at IS NULL AND delivery_error IS NULL AND seq > ? ORDER BY seq LIMIT ?`).all(
    afterSeq,
    limit,
  ) as OutboundRow[];
}

export function markDelivered(db: Database.Database, id: string, platformMessageId: string | null): void {
  prepared(db, `UPDATE messages_out SET delivered_at = ?, platform_message_id = ?, delivery_error = NULL WHERE id = ? AND delivered_at IS NULL`).run(
    isoNow(),
    platformMessageId,
    id,
  );
}

/**
 * A row that could not be delivered: `delivery_error` recorded, and the agent told with a context row (trigger 0, so
 * the notice alone never wakes it and cannot loop) that rides along with its next prompt.
 */
export function recordDeliveryFailure(db: Database.Database, id: string, error: string): void {
  db.transaction(() => {
    const row = prepared(db, 'SELECT * FROM messages_out WHERE id = ? AND delivered_at IS NULL').get(id) as OutboundRow | undefined;
    if (!row) return;
    prepared(db, 'UPDATE messages_out SET delivery_error = ? WHERE id = ? AND delivered_at IS NULL').run(error, id);
    insertInbound(db, {
      kind: 'system',
      content: { action: 'deliver_message', status: 'error', error: `message ${row.seq} was not delivered: ${error}`, result: { messageId: row.seq } },
      trigger: 0,
      channelType: row.channel_type,
      platformId: row.platform_id,
      threadId: row.thread_id,
    });
  }).immediate();
}

/** The platform's id of the message with this seq: an outbound row's delivery receipt, or a chat-sdk message's own id. */
export function platformMessageIdOf(db: Database.Database, seq: number): string | null {
  const found = findBySeq(db, seq);
  if (!found) return null;
  if (found.table === 'messages_out') {
    const r = prepared(db, 'SELECT platform_message_id FROM messages_out WHERE id = ?').get(found.id) as { platform_message_id: string | null };
    return r.platform_message_id;
  }
  const row = prepared(db, `SELECT kind, content FROM messages_in WHERE id = ?`).get(found.id) as { kind: string; content: string } | undefined;
  if (row?.kind !== 'chat-sdk') return null;
  const parsed = parseInboundContent(row.kind, row.content);
  const messageId = parsed.ok ? (parsed.value.content as { id?: unknown }).id : undefined;
  return typeof messageId === 'string' ? messageId : null;
}

/** Where the session's first due message came from (to show typing there, or tell it why it waits). */
export function firstDueRouting(db: Database.Database): { channel_type: string | null; platform_id: string | null; thread_id: string | null } | undefined {
  return prepared(db, `SELECT channel_type, platform_id, thread_id FROM messages_in WHERE ${DUE_NOW} ORDER BY seq LIMIT 1`).get({ now: isoNow() }) as
    { channel_type: string | null; platform_id: string | null; thread_id: string | null } | undefined;
}

/**
 * Refuse the session's due messages: mark them failed with the notice as their error (one try counted, so a recurring
 * task still gets its next occurrence). Returns the rows, so the chat can be told.
 */
export function refuseDueMessages(db: Database.Database, notice: string): InboundRow[] {
  return prepared(
    db,
    `UPDATE messages_in SET status = 'failed', status_changed = @now, tries = tries + 1, last_error = @notice WHERE ${DUE_NOW} RETURNING *`,
  ).all({ now: isoNow(), notice }) as InboundRow[];
}

/** Say why the rows of a batch in work will be retried. */
export function markBatchError(db: Database.Database, ids: readonly string[], error: string): void {
  const mark = prepared(db, `UPDATE messages_in SET last_error = ? WHERE id = ? AND status = 'processing'`);
  db.transaction(() => ids.forEach((id) => mark.run(error, id))).immediate();
}

/** Of `ids`, the messages `db` is done with: finished (or pruned away), and nothing undelivered in the session. */
export function doneMessages(db: Database.Database, ids: string[]): string[] {
  if (ids.length === 0) return [];
  if (prepared(db, 'SELECT 1 FROM messages_out WHERE delivered_at IS NULL AND delivery_error IS NULL LIMIT 1').get()) return [];
  return (
    prepared(
      db,
      `SELECT c.value AS id FROM json_each(?) c
       WHERE NOT EXISTS (SELECT 1 FROM messages_in m WHERE m.id = c.value AND m.status NOT IN ('completed', 'failed'))`,
    ).all(JSON.stringify(ids)) as { id: string }[]
  ).map((r) => r.id);
}

/** Ids of the messages not finished (what a new database must be given again when this one is lost). */
export function unfinishedIds(db: Database.Database): string[] {
  return (prepared(db, `SELECT id FROM messages_in WHERE status NOT IN ('completed', 'failed')`).all() as { id: string }[]).map((r) => r.id);
}

/** The rows the agent wrote and nobody delivered yet (kept in memory while a lost database is replaced). */
export function allUndelivered(db: Database.Database): OutboundRow[] {
  return prepared(db, `SELECT * FROM messages_out WHERE delivered_at IS NULL AND delivery_error IS NULL ORDER BY seq`).all() as OutboundRow[];
}

/** Write rows read from a lost database into its successor, with their ids and new seqs, in order. */
export function insertOutboundCopies(db: Database.Database, rows: readonly OutboundRow[]): void {
  if (rows.length === 0) return;
  const insert = prepared(
    db,
    `INSERT OR IGNORE INTO messages_out (id, seq, in_reply_to, timestamp, kind, platform_id, channel_type, thread_id, content)
     VALUES (@id, (SELECT 1 + MAX(COALESCE((SELECT MAX(seq) FROM messages_in), 0), COALESCE((SELECT MAX(seq) FROM messages_out), 0))),
       @in_reply_to, @timestamp, @kind, @platform_id, @channel_type, @thread_id, @content)`,
  );
  db.transaction(() => rows.forEach((row) => insert.run(row))).immediate();
}

/** The inbound row with `id`, if it is there: an idempotent accept returns the first receipt. */
export function inboundReceipt(db: Database.Database, id: string): { id: string; seq: number } | undefined {
  return prepared(db, 'SELECT id, seq FROM messages_in WHERE id = ?').get(id) as { id: string; seq: number } | undefined;
}
