import type Database from 'better-sqlite3';
import { prepared } from './connection.js';

/**
 * How many tasks one session may have waiting (pending, paused or running) — the one limit every way of scheduling
 * checks (the HTTP API, the agent's `schedule_task`, the host's task action), so no entry point can fill a session
 * with thousands of recurring tasks.
 */
export const MAX_ACTIVE_TASKS = 100;

/** Why another task cannot be scheduled in this session, or undefined when it can. */
export function taskLimitProblem(db: Database.Database): string | undefined {
  const { n } = prepared(db, `SELECT count(*) AS n FROM messages_in WHERE kind = 'task' AND status IN ('pending', 'paused', 'processing')`).get() as {
    n: number;
  };
  if (n < MAX_ACTIVE_TASKS) return undefined;
  return `this session already has ${n} active tasks (at most ${MAX_ACTIVE_TASKS}): cancel some before scheduling more`;
}
