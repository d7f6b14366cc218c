import type Database from 'better-sqlite3';
import { prepared } from './connection.js';

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

/**
 * The most rows one prune deletes, so it holds the session's write lock (and the host's event loop) for milliseconds
 * even when years of runs are due at once; a full batch makes the next sweep prune again.
 */
export const PRUNE_BATCH = 2000;

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

/**
 * Delete up to PRUNE_BATCH finished task rows the policy lets go; returns how many. Reads first, outside the write
 * lock: most prunes delete nothing. A row is deleted only if it is still a finished task (finished rows never change
 * back, but the check costs nothing).
 */
export function pruneTaskHistory(db: Database.Database, policy: TaskHistoryPolicy, now = Date.now()): number {
  const params = { keepRuns: policy.keepRuns, cutoff: new Date(now - policy.keepDays * 86_400_000).toISOString(), limit: PRUNE_BATCH };
  const ids = (prepared(db, `${PRUNABLE} ORDER BY f.seq LIMIT @limit`).all(params) as { id: string }[]).map((row) => row.id);
  if (ids.length === 0) return 0;
  const remove = prepared(db, `DELETE FROM messages_in WHERE id = ? AND kind = 'task' AND status IN ('completed', 'failed')`);
  return db.transaction(() => ids.reduce((deleted, id) => deleted + remove.run(id).changes, 0)).immediate();
}
