import type Database from 'better-sqlite3';
import { prepared } from '../db/connection.js';
import { ACTIVE_TASK_MATCH, cancelTask, type TaskCanceller } from '../db/tasks.js';
import type { InboundRow } from '../db/types.js';
import { isoNow, parseTimeInZone } from '../shared/time.js';
import { PincerError } from '../shared/errors.js';
import { nextOccurrence, validateCron } from './recurrence.js';

/**
 * Scheduled tasks as the host changes them: the `update_task`/`pause_task`/… system actions of the agent and the HTTP
 * API's task routes both come here. A task is a `task` row in a session DB; a recurring one is a series of rows with
 * one `series_id`. Its id is the series id (the id of its first row), and every change finds the live occurrence with
 * the task tools' match (`ACTIVE_TASK_MATCH`); a cancel is the tools' `cancelTask`.
 */

/** What a client sees of an active task. */
export interface TaskSummary {
  /** the task's id: its series id, stable across occurrences. */
  id: string;
  /** the row of the live occurrence. */
  occurrenceId: string;
  sessionId: string;
  /** where the task's answers go. */
  channelType: string | null;
  conversation: string | null;
  threadId: string | null;
  status: 'pending' | 'paused';
  prompt: string;
  script: string | null;
  /** next run (ISO UTC); null: as soon as possible. */
  processAfter: string | null;
  /** cron expression read in `timezone`, or null for a one-off task. */
  recurrence: string | null;
  timezone: string;
}

/** A change to a task. In `update`, absent fields stay; `recurrence: null` makes it one-off, `script: null` removes it. */
export type TaskCommand =
  | { op: 'pause' }
  | { op: 'resume' }
  | { op: 'cancel'; by: TaskCanceller }
  | { op: 'update'; prompt?: string; processAfter?: string; recurrence?: string | null; script?: string | null };

/** One session as the task board sees it. */
export interface TaskSession {
  id: string;
  /** the session's port (its `tasks` and `changeTask`). */
  port: { tasks(): Promise<InboundRow[]>; changeTask(taskId: string, command: TaskCommand, timezone: string): Promise<InboundRow | null> };
  timezone: string;
}

/** The live occurrence of a task in one session DB (newest first, should there be two). */
export function activeTaskRow(db: Database.Database, taskId: string): InboundRow | undefined {
  return prepared(db, `SELECT * FROM messages_in WHERE ${ACTIVE_TASK_MATCH} ORDER BY seq DESC LIMIT 1`).get({ taskId }) as InboundRow | undefined;
}

/**
 * Apply a change to the live occurrence of `taskId`, in one immediate transaction (the runner may pick the row at the
 * same moment). Returns the row after the change, null after a cancel. Throws `not-found` when the task has no
 * pending or paused occurrence, `invalid-input` for a bad time or cron expression.
 */
export function applyTaskCommand(db: Database.Database, taskId: string, command: TaskCommand, timezone: string): InboundRow | null {
  return db
    .transaction((): InboundRow | null => {
      const row = activeTaskRow(db, taskId);
      if (!row) throw new PincerError('not-found', `no active task "${taskId}": only a pending or paused task can be changed (it may be running, done or cancelled)`);
      const now = isoNow();
      switch (command.op) {
        case 'cancel':
          cancelTask(db, taskId, command.by);
          return null;
        case 'pause':
          if (row.status === 'pending') prepared(db, `UPDATE messages_in SET status = 'paused', status_changed = ? WHERE id = ?`).run(now, row.id);
          break;
        case 'resume':
          if (row.status === 'paused') {
            // A missed occurrence of a recurring task is skipped, not run late; a one-off task runs now.
            const due = row.recurrence && row.process_after && row.process_after < now ? nextOccurrence(row.recurrence, timezone).toISOString() : row.process_after;
            prepared(db, `UPDATE messages_in SET status = 'pending', process_after = ?, status_changed = ? WHERE id = ?`).run(due, now, row.id);
          }
          break;
        case 'update':
          updateRow(db, row, command, timezone, now);
          break;
      }
      return prepared(db, 'SELECT * FROM messages_in WHERE id = ?').get(row.id) as InboundRow;
    })
    .immediate();
}

function updateRow(db: Database.Database, row: InboundRow, change: Extract<TaskCommand, { op: 'update' }>, timezone: string, now: string): void {
  const content = taskContent(row);
  if (change.prompt !== undefined) content.prompt = change.prompt;
  if (change.script === null) delete content.script;
  else if (change.script !== undefined) content.script = change.script;
  const recurrence = change.recurrence === undefined ? row.recurrence : change.recurrence;
  if (recurrence) validateCron(recurrence, timezone);
  let processAfter = row.process_after;
  // A recurring task given another rule runs next by the new rule (its due time came from the old one); a one-off
  // task given a rule keeps the time it was scheduled for, as its first run.
  if (change.processAfter === undefined && row.recurrence && recurrence && recurrence !== row.recurrence) {
    processAfter = nextOccurrence(recurrence, timezone).toISOString();
  }
  if (change.processAfter !== undefined) {
    const parsed = parseTimeInZone(change.processAfter, timezone);
    if (!parsed) throw new PincerError('invalid-input', `processAfter: not a time: "${change.processAfter}" (write it like 2026-12-01T09:00, read in ${timezone}, or with Z)`, { field: 'processAfter' });
    processAfter = parsed;
  }
  prepared(db, 'UPDATE messages_in SET content = ?, recurrence = ?, process_after = ?, status_changed = ? WHERE id = ?').run(
    JSON.stringify(content),
    recurrence,
    processAfter,
    now,
    row.id,
  );
}

/** Every active task of one session, soonest first. */
export function activeTaskRows(db: Database.Database): InboundRow[] {
  return prepared(
    db,
    `SELECT * FROM messages_in WHERE kind = 'task' AND status IN ('pending', 'paused') ORDER BY julianday(coalesce(process_after, timestamp)), seq`,
  ).all() as InboundRow[];
}

export function summarizeTask(row: InboundRow, session: Pick<TaskSession, 'id' | 'timezone'>): TaskSummary {
  const content = taskContent(row);
  return {
    id: row.series_id ?? row.id,
    occurrenceId: row.id,
    sessionId: session.id,
    channelType: row.channel_type,
    conversation: row.platform_id,
    threadId: row.thread_id,
    status: row.status as TaskSummary['status'],
    prompt: typeof content.prompt === 'string' ? content.prompt : '',
    script: typeof content.script === 'string' ? content.script : null,
    processAfter: row.process_after,
    recurrence: row.recurrence,
    timezone: session.timezone,
  };
}

/** The tasks of every session of the host, read and changed through each session's port. */
export class TaskBoard {
  constructor(private readonly sessions: () => Iterable<TaskSession>) {}

  async list(): Promise<TaskSummary[]> {
    const tasks: TaskSummary[] = [];
    for (const session of this.sessions()) for (const row of await session.port.tasks()) tasks.push(summarizeTask(row, session));
    return tasks;
  }

  /** The active task with this id; `not-found` when no session has one. */
  async get(taskId: string): Promise<TaskSummary> {
    const { session, row } = await this.find(taskId);
    return summarizeTask(row, session);
  }

  /** Change a task; returns it after the change (`null` once cancelled). */
  async change(taskId: string, command: TaskCommand): Promise<TaskSummary | null> {
    const { session } = await this.find(taskId);
    const row = await session.port.changeTask(taskId, command, session.timezone);
    return row && summarizeTask(row, session);
  }

  private async find(taskId: string): Promise<{ session: TaskSession; row: InboundRow }> {
    for (const session of this.sessions()) {
      const row = (await session.port.tasks()).find((r) => r.id === taskId || r.series_id === taskId);
      if (row) return { session, row };
    }
    throw new PincerError('not-found', `no active task "${taskId}": only a pending or paused task is listed (it may be running, done or cancelled)`);
  }
}

function taskContent(row: InboundRow): Record<string, unknown> {
  try {
    const content = JSON.parse(row.content) as unknown;
    return content && typeof content === 'object' && !Array.isArray(content) ? { ...(content as Record<string, unknown>) } : {};
  } catch { // agent-written content that is not JSON: the task shows an empty prompt
    return {};
  }
}
