import type Database from 'better-sqlite3';
import { prepared } from '../db/connection.js';
import type { InboxRow } from './session/port.js';
import { isoNow } from '../shared/time.js';

/**
 * The host's inbox: every inbound message it accepted (`202`) for a session, in the central DB (`inbound_copies`),
 * from before the session has it until the session is done with it. A session's database is a file in the agent's
 * folder — deleted, replaced or damaged, it takes its pending messages with it — and a served session may be
 * unreachable or lost with its machine: what is here is written into the session again (`accept` is idempotent on
 * the message id), so a message the host accepted is answered all the same.
 *
 * `pushed` says whether the session has acknowledged having the row; unpushed rows are pushed again on every turn of
 * the session's pipeline. A message is done once its row is `completed` or `failed` (or pruned away) and nothing the
 * agent wrote waits for delivery (at-least-once: an answer may come twice after a loss, never not at all).
 */
/** Few rows are checked on every turn (so few are sent twice after a loss); many, at most once a second. */
const PRUNE_EVERY_TURN_UP_TO = 100;
const PRUNE_EVERY_MS = 1000;

export class Inbox {
  /** per session: when its rows were last checked, and how many were left (0: nothing to check until `keep`). */
  private readonly pruned = new Map<string, { at: number; left: number }>();

  constructor(private readonly central: Database.Database) {}

  /** Keep a row before it is written into the session. */
  keep(sessionId: string, row: InboxRow): void {
    prepared(this.central, 'INSERT OR IGNORE INTO inbound_copies (session_id, message_id, row, created_at, pushed) VALUES (?, ?, ?, ?, 0)').run(
      sessionId,
      row.id,
      JSON.stringify(row),
      isoNow(),
    );
    const pruned = this.pruned.get(sessionId);
    if (pruned) pruned.left += 1;
  }

  /** The session has the row. */
  markPushed(sessionId: string, messageId: string): void {
    prepared(this.central, 'UPDATE inbound_copies SET pushed = 1 WHERE session_id = ? AND message_id = ? AND pushed = 0').run(sessionId, messageId);
  }

  /** The session refused the row for good (bad input): it is not kept. */
  drop(sessionId: string, messageId: string): void {
    prepared(this.central, 'DELETE FROM inbound_copies WHERE session_id = ? AND message_id = ?').run(sessionId, messageId);
  }

  /** Whether there is anything to check with the session (throttled when there are many, unless `now`). */
  pruneDue(sessionId: string, now = false): boolean {
    const last = this.pruned.get(sessionId);
    return now || !last || (last.left > 0 && (last.left <= PRUNE_EVERY_TURN_UP_TO || Date.now() - last.at >= PRUNE_EVERY_MS));
  }

  /** Ids of the session's pushed rows (what to ask the session about). */
  pushedIds(sessionId: string): string[] {
    return (prepared(this.central, 'SELECT message_id FROM inbound_copies WHERE session_id = ? AND pushed = 1').all(sessionId) as { message_id: string }[]).map(
      (r) => r.message_id,
    );
  }

  /** Drop the rows the session is done with. */
  prune(sessionId: string, asked: number, done: string[]): void {
    if (done.length > 0) {
      const drop = prepared(this.central, 'DELETE FROM inbound_copies WHERE session_id = ? AND message_id = ?');
      this.central.transaction(() => done.forEach((id) => drop.run(sessionId, id)))();
    }
    this.pruned.set(sessionId, { at: Date.now(), left: asked - done.length + this.unpushed(sessionId).length });
  }

  /** The trace context the host stored with a message it accepted (its answers' spans are children of it). */
  traceContextOf(sessionId: string, messageId: string): string | undefined {
    const row = prepared(this.central, 'SELECT row FROM inbound_copies WHERE session_id = ? AND message_id = ?').get(sessionId, messageId) as
      { row: string } | undefined;
    if (!row) return undefined;
    const stored = JSON.parse(row.row) as { traceContext?: string | null; trace_context?: string | null };
    return stored.traceContext ?? stored.trace_context ?? undefined;
  }

  /** When the host accepted a message it still holds. */
  acceptedAt(sessionId: string, messageId: string): string | undefined {
    const row = prepared(this.central, 'SELECT created_at FROM inbound_copies WHERE session_id = ? AND message_id = ?').get(sessionId, messageId) as
      { created_at: string } | undefined;
    return row?.created_at;
  }

  /** How many rows the session has here (messages accepted and not known to be done). */
  count(sessionId: string): number {
    return (prepared(this.central, 'SELECT count(*) AS n FROM inbound_copies WHERE session_id = ?').get(sessionId) as { n: number }).n;
  }

  /** Rows the session has not acknowledged yet, in the order the host accepted them. */
  unpushed(sessionId: string): InboxRow[] {
    return this.rows(sessionId, 'AND pushed = 0');
  }

  /**
   * The session's database was set up afresh: every row it had not finished (`unfinished`; null: unknown, so all)
   * and every row it never had is to be pushed again. Returns those rows, in the order the host accepted them.
   */
  reopen(sessionId: string, unfinished: string[] | null): InboxRow[] {
    const rows = this.rows(sessionId, '');
    const open = unfinished && new Set(unfinished);
    const again = open ? rows.filter((row) => open.has(row.id)) : rows;
    const mark = prepared(this.central, 'UPDATE inbound_copies SET pushed = 0 WHERE session_id = ? AND message_id = ?');
    this.central.transaction(() => again.forEach((row) => mark.run(sessionId, row.id)))();
    return this.unpushed(sessionId);
  }

  private rows(sessionId: string, where: string): InboxRow[] {
    return (prepared(this.central, `SELECT row FROM inbound_copies WHERE session_id = ? ${where} ORDER BY rowid`).all(sessionId) as { row: string }[]).map(
      (r) => inboxRowOf(JSON.parse(r.row) as Record<string, unknown>),
    );
  }
}

/** A stored row: an `InboxRow`, or (kept by an older host) the session's own row as it read it back. */
function inboxRowOf(stored: Record<string, unknown>): InboxRow {
  if (!('seq' in stored)) return stored as unknown as InboxRow;
  const s = stored as Record<string, string | number | null>;
  return {
    id: String(s.id),
    kind: String(s.kind),
    content: s.content,
    timestamp: (s.timestamp as string | null) ?? undefined,
    processAfter: (s.process_after as string | null) ?? null,
    recurrence: (s.recurrence as string | null) ?? null,
    seriesId: (s.series_id as string | null) ?? null,
    trigger: s.trigger === 0 ? 0 : 1,
    channelType: (s.channel_type as string | null) ?? null,
    platformId: (s.platform_id as string | null) ?? null,
    threadId: (s.thread_id as string | null) ?? null,
    traceContext: (s.trace_context as string | null) ?? null,
  };
}
