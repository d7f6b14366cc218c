import type Database from 'better-sqlite3';
import { prepared } from '../db/connection.js';
import { parseInboundContent, type InboundContent } from '../db/content.js';
import type { InboundRow } from '../db/types.js';
import { isoNow } from '../shared/time.js';

/**
 * The runner's side of `messages_in`: pick due pending rows oldest first in SQL, claim
 * them (processing, tries+1) in one BEGIN IMMEDIATE transaction, fail rows that can never be processed, and complete
 * or annotate batches. The runner never sets `failed` on a provider error and never retries: the host's sweep does.
 */
export interface ClaimedMessage {
  row: InboundRow;
  message: InboundContent;
}

export interface BatchCaps {
  maxMessages: number;
  maxBytes: number;
}

export interface Claim {
  /** the claimed rows, oldest first; empty when nothing was due or only a command was. */
  messages: ClaimedMessage[];
  /** a slash command at the head of the queue, claimed alone (commands run one at a time, in order). */
  command: ClaimedMessage | null;
  /** rows marked failed during this claim, with why. */
  failed: { row: InboundRow; error: string }[];
}

/** Rows the poll loop may take: pending, due, and not an answer to a question (the MCP server waits for those). */
const DUE = `status = 'pending'
  AND (process_after IS NULL OR julianday(process_after) <= julianday(@now))
  AND NOT (kind = 'system' AND CASE WHEN json_valid(content)
    THEN coalesce(json_extract(content, '$.type') = 'question_response', 0) ELSE 0 END)`;

const HAS_DUE_TRIGGER = `SELECT 1 FROM messages_in WHERE ${DUE} AND trigger = 1 LIMIT 1`;

/** The oldest due rows, as many as fit the count cap and the byte cap (always at least one). */
const PICK_DUE = `SELECT * FROM (
    SELECT m.*, SUM(length(content)) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) AS cum_bytes,
           ROW_NUMBER() OVER (ORDER BY seq) AS rn
    FROM messages_in m WHERE ${DUE}
  ) WHERE rn = 1 OR cum_bytes <= @maxBytes ORDER BY seq LIMIT @maxMessages`;

const NEXT_DUE = `SELECT MIN(julianday(process_after)) AS jd FROM messages_in
  WHERE status = 'pending' AND process_after IS NOT NULL AND julianday(process_after) > julianday(@now)`;

export class InboundQueue {
  constructor(
    private readonly db: Database.Database,
    private readonly caps: BatchCaps,
    /** whether a validated message is a slash command (runner-level or provider-native). */
    private readonly isCommand: (message: ClaimedMessage) => boolean,
  ) {}

  /**
   * Claim the next batch. `start` (idle runner): a command at the head is claimed alone; otherwise the rows before
   * the first command. `push` (a query is active): only rows before the first command; commands wait for the query
   * to end. Nothing is claimed unless a due row with trigger = 1 exists: context rows never wake the agent.
   */
  claim(mode: 'start' | 'push'): Claim {
    // Most wake-ups find nothing to do: look without taking the write lock first.
    if (!prepared(this.db, HAS_DUE_TRIGGER).get({ now: isoNow() })) return { messages: [], command: null, failed: [] };
    const claimTx = this.db.transaction((): Claim => {
      const now = isoNow();
      const result: Claim = { messages: [], command: null, failed: [] };
      if (!prepared(this.db, HAS_DUE_TRIGGER).get({ now })) return result;
      const rows = prepared(this.db, PICK_DUE).all({ now, ...this.caps }) as (InboundRow & { cum_bytes?: number; rn?: number })[];
      for (const raw of rows) {
        const { cum_bytes: _cum, rn: _rn, ...row } = raw;
        const parsed = parseInboundContent(row.kind, row.content);
        if (!parsed.ok) {
          this.markFailed(row.id, parsed.error, now);
          result.failed.push({ row, error: parsed.error });
          continue;
        }
        const claimed: ClaimedMessage = { row, message: parsed.value };
        if (this.isCommand(claimed)) {
          if (mode === 'start' && result.messages.length === 0) result.command = claimed;
          break;
        }
        result.messages.push(claimed);
      }
      const taken = result.command ? [result.command] : result.messages;
      for (const { row } of taken) this.markProcessing(row, now);
      return result;
    });
    return claimTx.immediate();
  }

  /** Mark the batch completed; only rows still processing (a sweep may have reset one meanwhile). */
  complete(ids: string[]): void {
    const now = isoNow();
    const stmt = prepared(this.db, `UPDATE messages_in SET status = 'completed', status_changed = ?, last_error = NULL WHERE id = ? AND status = 'processing'`);
    this.db.transaction(() => ids.forEach((id) => stmt.run(now, id))).immediate();
  }

  /**
   * Record a provider error on the batch; the rows stay `processing` for the host's sweep, which retries them — or,
   * with `retry: false` (an error another try cannot fix), gives them up at once.
   */
  recordError(ids: string[], error: string, options: { retry?: boolean } = {}): void {
    const stmt = prepared(this.db, 'UPDATE messages_in SET last_error = ?, no_retry = ? WHERE id = ?');
    const noRetry = options.retry === false ? 1 : 0;
    this.db.transaction(() => ids.forEach((id) => stmt.run(error, noRetry, id))).immediate();
  }

  /** Mark one claimed row failed with why (a task whose pre-script failed). */
  fail(id: string, error: string): void {
    this.markFailed(id, error, isoNow());
  }

  /** Milliseconds until the next scheduled row becomes due, or undefined when none is waiting. */
  msUntilNextDue(): number | undefined {
    const row = prepared(this.db, NEXT_DUE).get({ now: isoNow() }) as { jd: number | null };
    if (row.jd === null) return undefined;
    // julianday is a double: round to the whole millisecond the row was written with, or float noise adds 1 ms
    const dueMs = Math.round((row.jd - 2440587.5) * 86_400_000);
    return Math.max(0, Math.ceil(dueMs - Date.now()));
  }

  private markProcessing(row: InboundRow, now: string): void {
    prepared(this.db, `UPDATE messages_in SET status = 'processing', status_changed = ?, tries = tries + 1 WHERE id = ?`).run(now, row.id);
    row.status = 'processing';
    row.tries += 1;
  }

  private markFailed(id: string, error: string, now: string): void {
    prepared(this.db, `UPDATE messages_in SET status = 'failed', status_changed = ?, last_error = ? WHERE id = ?`).run(now, error, id);
  }
}
