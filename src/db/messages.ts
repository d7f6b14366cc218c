import type Database from 'better-sqlite3';
import { randomUUID } from '../shared/uuid.js';
import { isoNow } from '../shared/time.js';
import { prepared } from './connection.js';
import type { InboundRow, OutboundRow, RoutingContext } from './types.js';

/**
 * Writing and reading messages. `seq` is one sequence over both tables, allocated as 1 + the largest seq in either
 * table inside the same BEGIN IMMEDIATE transaction as the insert, so any process that follows this rule —
 * host, runner, MCP server, an outside tool — can write without a shared counter.
 */
const NEXT_SEQ = `(SELECT 1 + MAX(
  COALESCE((SELECT MAX(seq) FROM messages_in), 0),
  COALESCE((SELECT MAX(seq) FROM messages_out), 0)))`;

export interface NewInbound {
  id?: string;
  kind: string;
  /** the content object (serialised here) or a raw string (stored as given; for tests of bad input). */
  content: unknown;
  timestamp?: string;
  processAfter?: string | null;
  recurrence?: string | null;
  seriesId?: string | null;
  trigger?: 0 | 1;
  platformId?: string | null;
  channelType?: string | null;
  threadId?: string | null;
  status?: 'pending' | 'paused';
  /** the W3C traceparent of the span that wrote the message, when tracing is on (the runner continues the trace). */
  traceContext?: string | null;
}

export interface NewOutbound {
  id?: string;
  kind: string;
  content: unknown;
  routing: RoutingContext;
  timestamp?: string;
}

function serialise(content: unknown): string {
  return typeof content === 'string' ? content : JSON.stringify(content);
}

export function insertInbound(db: Database.Database, message: NewInbound): { id: string; seq: number } {
  const id = message.id ?? randomUUID();
  const stmt = prepared(
    db,
    `INSERT INTO messages_in (id, seq, kind, timestamp, status, process_after, recurrence, series_id, trigger,
       platform_id, channel_type, thread_id, content, trace_context)
     VALUES (?, ${NEXT_SEQ}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
  );
  const insert = db.transaction(
    () =>
      stmt.get(
        id,
        message.kind,
        message.timestamp ?? isoNow(),
        message.status ?? 'pending',
        message.processAfter ?? null,
        message.recurrence ?? null,
        message.seriesId ?? null,
        message.trigger ?? 1,
        message.platformId ?? null,
        message.channelType ?? null,
        message.threadId ?? null,
        serialise(message.content),
        message.traceContext ?? null,
      ) as { seq: number },
  );
  return { id, seq: insert.immediate().seq };
}

export function insertOutbound(db: Database.Database, message: NewOutbound): { id: string; seq: number } {
  const id = message.id ?? randomUUID();
  const stmt = prepared(
    db,
    `INSERT INTO messages_out (id, seq, in_reply_to, timestamp, kind, platform_id, channel_type, thread_id, content)
     VALUES (?, ${NEXT_SEQ}, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
  );
  const insert = db.transaction(
    () =>
      stmt.get(
        id,
        message.routing.inReplyTo,
        message.timestamp ?? isoNow(),
        message.kind,
        message.routing.platformId,
        message.routing.channelType,
        message.routing.threadId,
        serialise(message.content),
      ) as { seq: number },
  );
  return { id, seq: insert.immediate().seq };
}

export function getInbound(db: Database.Database, id: string): InboundRow | undefined {
  return prepared(db, 'SELECT * FROM messages_in WHERE id = ?').get(id) as InboundRow | undefined;
}

/** Outbound rows with seq greater than `afterSeq`, oldest first. */
export function outboundAfter(db: Database.Database, afterSeq: number, limit = 1000): OutboundRow[] {
  return prepared(db, 'SELECT * FROM messages_out WHERE seq > ? ORDER BY seq LIMIT ?').all(afterSeq, limit) as OutboundRow[];
}

/** A message as the agent addresses it: its integer id (`seq`), in either table. */
export interface MessageBySeq {
  table: 'messages_in' | 'messages_out';
  id: string;
  kind: string;
  content: string;
  /** where the message lives (its routing columns); `inReplyTo` is the outbound row's, null for inbound rows. */
  routing: RoutingContext;
}

/** The message either table holds under the agent-visible integer id, or undefined. */
export function findBySeq(db: Database.Database, seq: number): MessageBySeq | undefined {
  const row = prepared(
    db,
    `SELECT 'messages_in' AS tbl, id, kind, content, platform_id, channel_type, thread_id, NULL AS in_reply_to
       FROM messages_in WHERE seq = @seq
     UNION ALL SELECT 'messages_out', id, kind, content, platform_id, channel_type, thread_id, in_reply_to
       FROM messages_out WHERE seq = @seq`,
  ).get({ seq }) as
    | (Pick<OutboundRow, 'id' | 'kind' | 'content' | 'platform_id' | 'channel_type' | 'thread_id' | 'in_reply_to'> & {
        tbl: MessageBySeq['table'];
      })
    | undefined;
  return (
    row && {
      table: row.tbl,
      id: row.id,
      kind: row.kind,
      content: row.content,
      routing: {
        platformId: row.platform_id,
        channelType: row.channel_type,
        threadId: row.thread_id,
        inReplyTo: row.in_reply_to,
      },
    }
  );
}
