import type Database from 'better-sqlite3';
import { prepared } from '../../../db/connection.js';
import { isoNow } from '../../../shared/time.js';

/**
 * The HTTP channel's durable mailbox (central DB table `http_outbox`). Delivering to HTTP means storing the event
 * here; SSE streams and `GET …/events` replay from any event id, so a client that connects late, or reconnects with
 * `Last-Event-ID`, misses nothing. Local file paths of sent files stay here and are served by event id, never by path.
 */
export interface MailboxEvent {
  id: number;
  conversation: string;
  /** what clients see. */
  data: Record<string, unknown>;
  /** local files of a chat event, by index (served at /v1/files/<id>/<index>). */
  files: string[];
}

/**
 * The event type of a message a client posted to the conversation (`POST …/messages`), kept beside what the agent
 * sent so a page reloaded later shows both in order. Replayed and streamed only to a client that asks (`?sent=1`):
 * a bridge that follows the stream does not get its own posts back.
 */
export const SENT = 'sent';

export class HttpMailbox {
  constructor(private readonly db: Database.Database) {}

  /**
   * Store an event. `key` names the outbound row it delivers (`<session>:<row id>`): a row delivered again — the host
   * was killed after storing it and before marking the row delivered — is stored once, and `fresh` is false.
   */
  append(conversation: string, data: Record<string, unknown>, files: string[] = [], key?: string): MailboxEvent & { fresh: boolean } {
    const row = prepared(
      this.db,
      'INSERT INTO http_outbox (conversation, data, created_at, message_key) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id',
    ).get(conversation, JSON.stringify({ data, files }), isoNow(), key ?? null) as { id: number } | undefined;
    if (row) return { id: row.id, conversation, data: { ...data, id: row.id }, files, fresh: true };
    const stored = prepared(this.db, 'SELECT id FROM http_outbox WHERE message_key = ?').get(key) as { id: number };
    return { id: stored.id, conversation, data: { ...data, id: stored.id }, files, fresh: false };
  }

  /** A conversation's events after an id; a `sent` event (what a client posted) only when `withSent`. */
  after(conversation: string, afterId: number, limit = 500, withSent = false): MailboxEvent[] {
    const rows = prepared(
      this.db,
      `SELECT id, data FROM http_outbox WHERE conversation = ? AND id > ? AND (? OR json_extract(data, '$.data.type') IS NOT '${SENT}') ORDER BY id LIMIT ?`,
    ).all(conversation, afterId, withSent ? 1 : 0, limit) as { id: number; data: string }[];
    return rows.map((row) => this.toEvent(conversation, row));
  }

  /** The newest event id of any conversation (0 when there is none): ids past it were never issued here. */
  latestId(): number {
    return (prepared(this.db, 'SELECT coalesce(max(id), 0) AS id FROM http_outbox').get() as { id: number }).id;
  }

  /** The newest event of a conversation (for listings). */
  lastEvent(conversation: string): { id: number; createdAt: string } | undefined {
    const row = prepared(this.db, 'SELECT id, created_at FROM http_outbox WHERE conversation = ? ORDER BY id DESC LIMIT 1').get(conversation) as
      { id: number; created_at: string } | undefined;
    return row && { id: row.id, createdAt: row.created_at };
  }

  get(id: number): MailboxEvent | undefined {
    const row = prepared(this.db, 'SELECT id, conversation, data FROM http_outbox WHERE id = ?').get(id) as
      { id: number; conversation: string; data: string } | undefined;
    return row && this.toEvent(row.conversation, row);
  }

  private toEvent(conversation: string, row: { id: number; data: string }): MailboxEvent {
    const stored = JSON.parse(row.data) as { data: Record<string, unknown>; files: string[] };
    return { id: row.id, conversation, data: { ...stored.data, id: row.id }, files: stored.files };
  }
}
