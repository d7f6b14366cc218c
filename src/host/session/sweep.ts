import type Database from 'better-sqlite3';
import { endedOccurrences, failProcessing, hasDueTrigger, hasProcessing, nextDueAt, processingRows, retryProcessing } from '../../db/sweep.js';
import type { InboundRow } from '../../db/types.js';
import { isPincerError } from '../../shared/errors.js';
import { insertNextOccurrence, nextOccurrence } from '../../db/tasks.js';
import { PRUNE_BATCH, PRUNE_EVERY_MS, pruneTaskHistory } from '../../db/task-history.js';
import type { HostConfig } from '../types.js';

/**
 * The sweep of one session DB: the runner never retries, the host
 * does. A `processing` row that is not in the live runner's batch nor held by it (a task script still running, a
 * message carried to its next query; after a short grace, since the runner claims rows a moment before it records
 * them), or any `processing` row of a session whose runner is dead (and no runner the caller does not know of still
 * runs), goes back to
 * `pending` with exponential back-off via `process_after`; after the maximum tries it is `failed` and the caller
 * tells the originating chat. Completed (or failed) occurrences of recurring tasks get their next occurrence, and
 * once a minute finished task rows are pruned (task-history.ts).
 */
export interface SweepInput {
  runnerAlive: boolean;
  /** `runner_state.batch_ids` of the live runner. */
  batchIds: readonly string[];
  /**
   * the rows the live runner has now — its batch and what it holds outside it (running task scripts, carried
   * messages) — read inside the sweep's write transaction, so that a row moving from one to the other between two
   * reads is never in neither (the runner records a batch before it lets go of what it held)
   */
  heldIds?: () => readonly string[];
  /**
   * whether a runner the caller does not know of still runs (asked only while rows are in work and no live runner of
   * the caller's has said what it holds): one left by a supervisor that died, finishing its turn. Its rows stay in work
   * until it has ended; put back now, the next runner would answer them a second time.
   */
  unknownRunner?: () => boolean;
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
  /** rows are still `processing` after the sweep (a runner works on them, or one not known to the caller still may). */
  inWork: boolean;
}

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
    const result: SweepResult = { retried: [], failed: [], scheduled: [], recurrenceErrors: [], hasDue: false, nextDueMs: undefined, pruned: 0, inWork: false };
    const now = Date.now();
    // Most sweeps find nothing to do: look first, and take the write lock (which the runner waits on) only if needed.
    const processing = hasProcessing(this.db);
    const work = processing || endedOccurrences(this.db).some((row) => !this.reported.has(row.id));
    if (work) {
      const leftAlone = processing && input.unknownRunner?.() === true; // before the write lock: it may spawn a probe
      this.db
        .transaction(() => {
          if (!leftAlone) this.recoverStale(input, now, result);
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
    result.inWork = processing && hasProcessing(this.db);
    result.hasDue = hasDueTrigger(this.db, nowIso);
    const next = nextDueAt(this.db, nowIso);
    if (next !== undefined) result.nextDueMs = Math.max(0, next - Date.now());
    return result;
  }

  private recoverStale(input: SweepInput, now: number, result: SweepResult): void {
    const rows = processingRows(this.db);
    const inBatch = new Set(input.runnerAlive && rows.length > 0 ? [...input.batchIds, ...(input.heldIds?.() ?? [])] : input.batchIds);
    const nowIso = new Date(now).toISOString();
    for (const row of rows) {
      // An error another try cannot fix (the runner says so) is given up as soon as the runner let go of the row.
      const final = row.no_retry === 1 && row.last_error !== null;
      if (input.runnerAlive) {
        if (inBatch.has(row.id)) continue;
        const changed = row.status_changed ? Date.parse(row.status_changed) : 0;
        if (!final && now - changed < input.config.staleMs) continue;
      }
      if (final) {
        const error = `${row.last_error}; not retried, as another try cannot fix it`;
        failProcessing(this.db, row.id, error, nowIso);
        result.failed.push({ ...row, status: 'failed', last_error: error });
      } else if (row.tries >= input.config.maxTries) {
        const error = `failed after ${row.tries} tries${row.last_error ? `: ${row.last_error}` : ''}`;
        failProcessing(this.db, row.id, error, nowIso);
        result.failed.push({ ...row, status: 'failed', last_error: error });
      } else {
        const after = new Date(now + retryDelayMs(row.tries, input.config)).toISOString();
        const lastError = row.last_error ?? (input.runnerAlive ? 'not in the runner batch' : 'the runner died');
        retryProcessing(this.db, row.id, after, lastError, nowIso);
        result.retried.push(row);
      }
    }
  }

  private scheduleNext(input: SweepInput, result: SweepResult): void {
    for (const row of endedOccurrences(this.db)) {
      if (this.reported.has(row.id)) continue;
      let nextAt: string;
      try {
        nextAt = nextOccurrence(row.recurrence!, input.timezone);
      } catch (err) {
        if (!isPincerError(err)) throw err;
        this.reported.add(row.id);
        result.recurrenceErrors.push({ row, error: err.message });
        continue;
      }
      insertNextOccurrence(this.db, row, nextAt);
      result.scheduled.push({ row, nextAt });
    }
  }
}
