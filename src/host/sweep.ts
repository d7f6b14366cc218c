import type Database from 'better-sqlite3';
import { prepared } from '../db/connection.js';
import { insertInbound } from '../db/messages.js';
import type { InboundRow } from '../db/types.js';
import { isoNow } from '../shared/time.js';
import { isPincerError } from '../shared/errors.js';
import { nextOccurrence } from './recurrence.js';
import { PRUNE_BATCH, PRUNE_EVERY_MS, pruneTaskHistory } from './task-history.js';
import type { HostConfig } from './types.js';

/**
 * The sweep of one session DB (SPEC §3 "Errors and retries", seed "状态管理"): the runner never retries, the host
 * does. A `processing` row that is not in the live runner's batch (after a short grace, since the runner claims rows
 * a moment before it records its batch), or any `processing` row of a session whose runner is dead, goes back to
 * `pending` with exponential back-off via `process_after`; after the maximum tries it is `failed` and the caller
 * tells the originating chat. Completed (or failed) occurrences of recurring tasks get their next occurrence, and
 * once a minute finished task rows are pruned (task-history.ts).
 */
export interface SweepInput {
  runnerAlive: boolean;
  /** `runner_state.batch_ids` of the live runner. */
  batchIds: readonly string[];
  timezone: string;
  config: HostConfig['sweep'];
}

export interface SweepResult {
  /** rows put back to pending for another try. */
  retried: InboundRow[];
  /** rows that have just failed for good; the chat must be told. */
  failed: InboundRow[];
  /** next occurrences inserted: the completed row and the new row's process_after. */
  scheduled: { row: InboundRow; nextAt: string }[];
  /** occurrences whose next one cannot be computed (bad cron), reported once. */
  recurrenceErrors: { row: InboundRow; error: string }[];
  /** a due row with trigger = 1 is waiting: the session needs a runner. */
  hasDue: boolean;
  /** milliseconds until the next scheduled row falls due, if any. */
  nextDueMs: number | undefined;
  /** finished task rows deleted by the task history policy. */
  pruned: number;
}

const DUE_TRIGGER = `status = 'pending' AND trigger = 1
  AND (process_after IS NULL OR julianday(process_after) <= julianday(@now))
  AND NOT (kind = 'system' AND CASE WHEN json_valid(content)
    THEN coalesce(json_extract(content, '$.type') = 'question_response', 0) ELSE 0 END)`;

/** Occurrences that ran (tries > 0: a task cancelled before it ran has no successor) and have no successor yet. */
const ENDED_OCCURRENCES = `SELECT * FROM messages_in m
  WHERE kind = 'task' AND recurrence IS NOT NULL AND status IN ('completed', 'failed') AND tries > 0
    AND NOT EXISTS (SELECT 1 FROM messages_in n WHERE n.series_id = coalesce(m.series_id, m.id) AND n.seq > m.seq)
  ORDER BY seq`;

/** Retry n waits base × 2^(n−1), at most max. */
export function retryDelayMs(tries: number, config: HostConfig['sweep']): number {
  return Math.min(config.retryMaxMs, config.retryBaseMs * 2 ** Math.max(0, tries - 1));
}

export class Sweeper {
  /** occurrences whose recurrence error was already reported (a bad cron is reported once, not every sweep). */
  private readonly reported = new Set<string>();
  private lastPrunedAt = -Infinity;

  constructor(private readonly db: Database.Database) {}

  sweep(input: SweepInput): SweepResult {
    const result: SweepResult = { retried: [], failed: [], scheduled: [], recurrenceErrors: [], hasDue: false, nextDueMs: undefined, pruned: 0 };
    const now = Date.now();
    // Most sweeps find nothing to do: look first, and take the write lock (which the runner waits on) only if needed.
    const work =
      prepared(this.db, `SELECT 1 FROM messages_in WHERE status = 'processing' LIMIT 1`).get() !== undefined ||
      (prepared(this.db, ENDED_OCCURRENCES).all() as InboundRow[]).some((row) => !this.reported.has(row.id));
    if (work) {
      this.db
        .transaction(() => {
          this.recoverStale(input, now, result);
          this.scheduleNext(input, result);
        })
        .immediate();
    }
    // After scheduleNext, so an occurrence that just ended already has its successor.
    if (now - this.lastPrunedAt >= PRUNE_EVERY_MS) {
      result.pruned = pruneTaskHistory(this.db, input.config.taskHistory, now);
      // A full batch: more are due (a backlog), so the next sweep goes on.
      this.lastPrunedAt = result.pruned >= PRUNE_BATCH ? -Infinity : now;
    }
    const nowIso = new Date(now).toISOString();
    result.hasDue = prepared(this.db, `SELECT 1 FROM messages_in WHERE ${DUE_TRIGGER} LIMIT 1`).get({ now: nowIso }) !== undefined;
    const next = prepared(
      this.db,
      `SELECT MIN(julianday(process_after)) AS jd FROM messages_in
       WHERE status = 'pending' AND trigger = 1 AND process_after IS NOT NULL AND julianday(process_after) > julianday(@now)`,
    ).get({ now: nowIso }) as { jd: number | null };
    if (next.jd !== null) result.nextDueMs = Math.max(0, Math.ceil((next.jd - 2440587.5) * 86_400_000 - Date.now()));
    return result;
  }

  private recoverStale(input: SweepInput, now: number, result: SweepResult): void {
    const rows = prepared(this.db, `SELECT * FROM messages_in WHERE status = 'processing' ORDER BY seq`).all() as InboundRow[];
    const inBatch = new Set(input.batchIds);
    const nowIso = new Date(now).toISOString();
    for (const row of rows) {
      if (input.runnerAlive) {
        if (inBatch.has(row.id)) continue;
        const changed = row.status_changed ? Date.parse(row.status_changed) : 0;
        if (now - changed < input.config.staleMs) continue;
      }
      if (row.tries >= input.config.maxTries) {
        const error = `failed after ${row.tries} tries${row.last_error ? `: ${row.last_error}` : ''}`;
        prepared(
          this.db,
          `UPDATE messages_in SET status = 'failed', status_changed = ?, last_error = ? WHERE id = ? AND status = 'processing'`,
        ).run(nowIso, error, row.id);
        result.failed.push({ ...row, status: 'failed', last_error: error });
      } else {
        const after = new Date(now + retryDelayMs(row.tries, input.config)).toISOString();
        const lastError = row.last_error ?? (input.runnerAlive ? 'not in the runner batch' : 'the runner died');
        prepared(
          this.db,
          `UPDATE messages_in SET status = 'pending', status_changed = ?, process_after = ?, last_error = ?
           WHERE id = ? AND status = 'processing'`,
        ).run(nowIso, after, lastError, row.id);
        result.retried.push(row);
      }
    }
  }

  private scheduleNext(input: SweepInput, result: SweepResult): void {
    for (const row of prepared(this.db, ENDED_OCCURRENCES).all() as InboundRow[]) {
      if (this.reported.has(row.id)) continue;
      let nextAt: string;
      try {
        nextAt = nextOccurrence(row.recurrence!, input.timezone).toISOString();
      } catch (err) {
        if (!isPincerError(err)) throw err;
        this.reported.add(row.id);
        result.recurrenceErrors.push({ row, error: err.message });
        continue;
      }
      insertInbound(this.db, {
        kind: 'task',
        content: row.content,
        timestamp: isoNow(),
        processAfter: nextAt,
        recurrence: row.recurrence,
        seriesId: row.series_id ?? row.id,
        trigger: 1,
        platformId: row.platform_id,
        channelType: row.channel_type,
        threadId: row.thread_id,
      });
      result.scheduled.push({ row, nextAt });
    }
  }
}
