import type Database from 'better-sqlite3';
import { isoNow } from '../shared/time.js';
import { prepared } from './connection.js';
import { endAbandonedTools } from './tool-activity.js';
import type { RoutingContext, RunnerState, RunnerStateName } from './types.js';

/**
 * `session_state` (provider session ids and resume points, keyed per provider) and the one-row `runner_state`
 * (what the runner is doing, the batch in flight and its routing, a heartbeat) that the host and MCP server read.
 */
export function getSessionValue(db: Database.Database, key: string): string | undefined {
  const row = prepared(db, 'SELECT value FROM session_state WHERE key = ?').get(key) as { value: string } | undefined;
  return row?.value;
}

export function setSessionValue(db: Database.Database, key: string, value: string): void {
  prepared(
    db,
    `INSERT INTO session_state (key, value, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  ).run(key, value, isoNow());
}

export function deleteSessionValues(db: Database.Database, keys: string[]): void {
  const stmt = prepared(db, 'DELETE FROM session_state WHERE key = ?');
  db.transaction(() => keys.forEach((key) => stmt.run(key)))();
}

/**
 * The rows the live runner holds outside its batch: tasks whose pre-script runs, and claimed messages carried to the
 * next query. The host's sweep leaves them alone while that runner lives (they are not stale, only not yet asked).
 */
const HELD_KEY = 'runner:held';
/** at most this many ids are read back (the list is the agent's to write: a huge one only slows its own sweep) */
const MAX_HELD = 1000;

export function setHeldRows(db: Database.Database, ids: readonly string[]): void {
  if (ids.length === 0) deleteSessionValues(db, [HELD_KEY]);
  else setSessionValue(db, HELD_KEY, JSON.stringify(ids));
}

/** The held ids the runner last wrote; none when absent or not a list of strings. */
export function heldRows(db: Database.Database): string[] {
  const value = getSessionValue(db, HELD_KEY);
  if (value === undefined) return [];
  try {
    const parsed: unknown = JSON.parse(value);
    return Array.isArray(parsed) ? parsed.filter((id): id is string => typeof id === 'string').slice(0, MAX_HELD) : [];
  } catch {
    return []; // not JSON: the agent wrote it; nothing counts as held
  }
}

/** The keys under which a provider's conversation is remembered. */
export function sessionKeys(provider: string): { sessionId: string; resumeAt: string } {
  return { sessionId: `${provider}:session_id`, resumeAt: `${provider}:resume_at` };
}

interface RunnerStateRow {
  pid: number;
  provider: string;
  state: RunnerStateName;
  batch_ids: string;
  routing: string | null;
  heartbeat_at: string;
  started_at: string;
  updated_at: string;
}

export function readRunnerState(db: Database.Database): RunnerState | undefined {
  const row = prepared(db, 'SELECT * FROM runner_state WHERE id = 1').get() as RunnerStateRow | undefined;
  if (!row) return undefined;
  return {
    pid: row.pid,
    provider: row.provider,
    state: row.state,
    batchIds: JSON.parse(row.batch_ids) as string[],
    routing: row.routing ? (JSON.parse(row.routing) as RoutingContext) : null,
    heartbeatAt: row.heartbeat_at,
    startedAt: row.started_at,
    updatedAt: row.updated_at,
  };
}

/** Replace the runner_state row at start-up: a new runner has no batch in flight. */
export function initRunnerState(db: Database.Database, pid: number, provider: string): void {
  const now = isoNow();
  prepared(
    db,
    `INSERT OR REPLACE INTO runner_state (id, pid, provider, state, batch_ids, routing, heartbeat_at, started_at, updated_at)
     VALUES (1, ?, ?, 'starting', '[]', NULL, ?, ?, ?)`,
  ).run(pid, provider, now, now, now);
  deleteSessionValues(db, [HELD_KEY]); // what an earlier runner held is nobody's now
  endAbandonedTools(db); // and the calls it was running will not finish
}

export function setRunnerStateName(db: Database.Database, state: RunnerStateName): void {
  prepared(db, 'UPDATE runner_state SET state = ?, updated_at = ? WHERE id = 1').run(state, isoNow());
}

/**
 * Set the state only if it is still `expected` (compare-and-set); true when it changed. The MCP server uses it to
 * enter and leave `waiting_user` without overwriting a state the runner set meanwhile (idle, stopping).
 */
export function swapRunnerStateName(db: Database.Database, expected: RunnerStateName, next: RunnerStateName): boolean {
  return prepared(db, 'UPDATE runner_state SET state = ?, updated_at = ? WHERE id = 1 AND state = ?').run(next, isoNow(), expected).changes === 1;
}

/**
 * Record the batch in flight (or clear it with `[]`/null) together with the state. `busy` keeps a `waiting_user`
 * set by the MCP server: a follow-up pushed while a question is open does not end the wait for the answer.
 */
export function setRunnerBatch(db: Database.Database, state: RunnerStateName, batchIds: string[], routing: RoutingContext | null): void {
  prepared(
    db,
    `UPDATE runner_state SET state = CASE WHEN @state = 'busy' AND state = 'waiting_user' THEN state ELSE @state END,
       batch_ids = @batchIds, routing = @routing, updated_at = @now WHERE id = 1`,
  ).run({ state, batchIds: JSON.stringify(batchIds), routing: routing ? JSON.stringify(routing) : null, now: isoNow() });
}

/** The traceparent of the turn in flight (null when none), read by the MCP server to parent its tool spans. */
export function setRunnerTrace(db: Database.Database, traceparent: string | null): void {
  prepared(db, 'UPDATE runner_state SET trace_context = ? WHERE id = 1').run(traceparent);
}

export function readRunnerTrace(db: Database.Database): string | null {
  const row = prepared(db, 'SELECT trace_context FROM runner_state WHERE id = 1').get() as { trace_context: string | null } | undefined;
  return row?.trace_context ?? null;
}

export function writeHeartbeat(db: Database.Database): void {
  prepared(db, 'UPDATE runner_state SET heartbeat_at = ? WHERE id = 1').run(isoNow());
}

/**
 * A mark that changes whenever something was committed to `db` — by another connection (`data_version`) or by this
 * one (`total_changes()`) — since the last look: two equal marks mean nothing was written in between.
 */
export function commitMark(db: Database.Database): string {
  return `${String(db.pragma('data_version', { simple: true }))}:${String(prepared(db, 'SELECT total_changes()').pluck().get())}`;
}
