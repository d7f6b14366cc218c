import type Database from 'better-sqlite3';
import { isoNow } from '../shared/time.js';
import { prepared } from './connection.js';

/**
 * Scheduled-task rows as every entry point changes them: the agent's task tools (MCP server), its task actions and the
 * HTTP API (host). A task is a `task` row; a recurring one is a series of rows sharing `series_id`, and its id is the
 * series id (the id of its first row).
 */

/**
 * The live occurrence(s) of task `@taskId` (the seed's match): its first id keeps working for a recurring series
 * whose first row has long run.
 */
export const ACTIVE_TASK_MATCH = `(id = @taskId OR series_id = @taskId) AND kind = 'task' AND status IN ('pending', 'paused')`;

/** Who cancelled a task, kept in its `last_error`. */
export type TaskCanceller = 'agent' | 'http';

const CANCELLED_BY: Record<TaskCanceller, string> = {
  agent: 'cancelled by the agent',
  http: 'cancelled over HTTP',
};

/** SQL: the row is a cancelled task (not an error: left out of a session's last error). */
export const CANCELLED_TASK = `(kind = 'task' AND status = 'failed' AND last_error IN (${Object.values(CANCELLED_BY)
  .map((reason) => `'${reason}'`)
  .join(', ')}))`;

/**
 * Cancel a task, the one way for every entry point: each live occurrence becomes `failed` (a task that will never run,
 * among the statuses the session DB has) with `last_error` saying who cancelled it, and loses its recurrence, so the
 * host's sweep never schedules a successor. Returns how many rows changed: 0 when no occurrence was pending or paused
 * (running, done or cancelled already).
 */
export function cancelTask(db: Database.Database, taskId: string, by: TaskCanceller): number {
  return prepared(
    db,
    `UPDATE messages_in SET status = 'failed', last_error = @reason, recurrence = NULL, status_changed = @now WHERE ${ACTIVE_TASK_MATCH}`,
  ).run({ taskId, reason: CANCELLED_BY[by], now: isoNow() }).changes;
}
