import type Database from 'better-sqlite3';
import { prepared } from './connection.js';
import type { InboundRow } from './types.js';

/**
 * The queries of a session's sweep (the host's retry, recurrence and wake decisions, src/host/sweep.ts): which rows
 * are in work, which occurrences ended without a successor, what is due and when the next row falls due, and the two
 * ways a row in work is let go (back to pending for another try, or failed for good).
 */

/** A pending row that wakes the agent and is due; answers to questions wait for their question. */
const DUE_TRIGGER = `status = 'pending' AND trigger = 1
  AND (process_after IS NULL OR julianday(process_after) <= julianday(@now))
  AND NOT (kind = 'system' AND CASE WHEN json_valid(content)
    THEN coalesce(json_extract(content, '$.type') = 'question_response', 0) ELSE 0 END)`;

/** Occurrences that ran (tries > 0: a task cancelled before it ran has no successor) and have no successor yet. */
const ENDED_OCCURRENCES = `SELECT * FROM messages_in m
  WHERE kind = 'task' AND recurrence IS NOT NULL AND status IN ('completed', 'failed') AND tries > 0
    AND NOT EXISTS (SELECT 1 FROM messages_in n WHERE n.series_id = coalesce(m.series_id, m.id) AND n.seq > m.seq)
  ORDER BY seq`;

export function hasProcessing(db: Database.Database): boolean {
  return prepared(db, `SELECT 1 FROM messages_in WHERE status = 'processing' LIMIT 1`).get() !== undefined;
}

export function processingRows(db: Database.Database): InboundRow[] {
  return prepared(db, `SELECT * FROM messages_in WHERE status = 'processing' ORDER BY seq`).all() as InboundRow[];
}

export function endedOccurrences(db: Database.Database): InboundRow[] {
  return prepared(db, ENDED_OCCURRENCES).all() as InboundRow[];
}

/** Whether a row that wakes the agent is due at `nowIso`. */
export function hasDueTrigger(db: Database.Database, nowIso: string): boolean {
  return prepared(db, `SELECT 1 FROM messages_in WHERE ${DUE_TRIGGER} LIMIT 1`).get({ now: nowIso }) !== undefined;
}

/** When (epoch ms) the next row that wakes the agent falls due after `nowIso`, if any. */
export function nextDueAt(db: Database.Database, nowIso: string): number | undefined {
  const next = prepared(
    db,
    `SELECT MIN(julianday(process_after)) AS jd FROM messages_in
     WHERE status = 'pending' AND trigger = 1 AND process_after IS NOT NULL AND julianday(process_after) > julianday(@now)`,
  ).get({ now: nowIso }) as { jd: number | null };
  return next.jd === null ? undefined : Math.ceil((next.jd - 2440587.5) * 86_400_000);
}

/** A row in work fails for good (if it is still in work). */
export function failProcessing(db: Database.Database, id: string, error: string, nowIso: string): void {
  prepared(db, `UPDATE messages_in SET status = 'failed', status_changed = ?, last_error = ? WHERE id = ? AND status = 'processing'`).run(nowIso, error, id);
}

/** A row in work goes back to pending, due again at `after` (if it is still in work). */
export function retryProcessing(db: Database.Database, id: string, after: string, lastError: string, nowIso: string): void {
  prepared(
    db,
    `UPDATE messages_in SET status = 'pending', status_changed = ?, process_after = ?, last_error = ?
     WHERE id = ? AND status = 'processing'`,
  ).run(nowIso, after, lastError, id);
}
