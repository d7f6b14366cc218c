import type Database from 'better-sqlite3';
import { prepared } from '../db/connection.js';

/**
 * Pruning finished task rows. Every run of a recurring task is a `task` row in the session's `messages_in`, and a task
 * that ended stays as one: a task every minute left 1,440 rows a day, forever. The host's sweep deletes a finished
 * (`completed` or `failed`) task row when either
 *  - its task has `keepRuns` newer finished runs (the newest runs stay for inspection), or
 *  - its task has no live occurrence (a one-off that ran, a cancelled or ended series) and it finished more than
 *    `keepDays` days ago.
 * A live occurrence (pending, paused or running) is never touched, so a series goes on. Nor is the newest row of the
 * table (`seq` is allocated as 1 + the largest, so deleting it would hand its number out again), nor a row whose
 * answer is still waiting for delivery. Chat messages and the agent's answers are conversation history: kept.
 */
export interface TaskHistoryPolicy {
  /** finished runs kept per task (its newest). */
  keepRuns: number;
  /** days a finished task with no live occurrence is kept. */
  keepDays: number;
}

/** How often a session's sweep prunes (the first sweep of a session always does). */
export const PRUNE_EVERY_MS = 60_000;

const PRUNABLE = `
  WITH live AS (
    SELECT DISTINCT coalesce(series_id, id) AS task FROM messages_in
    WHERE kind = 'task' AND status IN ('pending', 'paused', 'processing')
  ), finished AS (
    SELECT id, seq, coalesce(status_changed, timestamp) AS ended, coalesce(series_id, id) AS task,
           ROW_NUMBER() OVER (PARTITION BY coalesce(series_id, id) ORDER BY seq DESC) AS newest
    FROM messages_in WHERE kind = 'task' AND status IN ('completed', 'failed')
  )
  SELECT id FROM finished f
  WHERE (f.newest > @keepRuns OR (f.task NOT IN (SELECT task FROM live) AND julianday(f.ended) < julianday(@cutoff)))
    AND f.seq < (SELECT MAX(seq) FROM messages_in)
    AND NOT EXISTS (SELECT 1 FROM messages_out o WHERE o.delivered_at IS NULL AND o.in_reply_to = f.id)`;

/** Delete the finished task rows the policy lets go; returns how many. Reads first: most sweeps delete nothing. */
export function pruneTaskHistory(db: Database.Database, policy: TaskHistoryPolicy, now = Date.now()): number {
  const params = { keepRuns: policy.keepRuns, cutoff: new Date(now - policy.keepDays * 86_400_000).toISOString() };
  if ((prepared(db, `${PRUNABLE} LIMIT 1`).all(params) as unknown[]).length === 0) return 0;
  return db
    .transaction(() => prepared(db, `DELETE FROM messages_in WHERE id IN (${PRUNABLE})`).run(params).changes)
    .immediate();
}
