import type Database from 'better-sqlite3';
import { z } from 'zod';
import { parseRecurrence } from '../shared/cron.js';
import { PincerError } from '../shared/errors.js';
import { isoNow, parseTimeInZone } from '../shared/time.js';
import { randomUUID } from '../shared/uuid.js';
import { prepared } from './connection.js';
import { insertInbound } from './messages.js';
import { taskLimitProblem } from './task-limit.js';
import type { InboundRow } from './types.js';

/**
 * Scheduled tasks, the one owner of their rows: schedule, list, change (update, pause, resume) and cancel, with one
 * schema and one set of messages for every entry point — the agent's task tools (MCP server), the host's system
 * actions, the HTTP API and the CLI add only their own transport. A task is a `task` row; a recurring one is a series
 * of rows sharing `series_id`, and its id is the series id (the id of its first row). Times without a zone, and cron
 * expressions, are read in the session's time zone.
 */

/** A new task as every entry point takes it. */
export const TaskRequestSchema = z.object({
  prompt: z.string().min(1),
  processAfter: z.string().min(1).optional(),
  recurrence: z.string().min(1).optional(),
  script: z.string().optional(),
});
export type TaskRequest = z.infer<typeof TaskRequestSchema>;

/** A change to a task. Absent fields stay; `recurrence: null` makes it one-off, `script: null` removes it. */
export const TaskChangeSchema = z.object({
  prompt: z.string().min(1).optional(),
  processAfter: z.string().min(1).optional(),
  recurrence: z.string().nullable().optional(),
  script: z.string().nullable().optional(),
});
export type TaskChange = z.infer<typeof TaskChangeSchema>;

/** Who cancelled a task, kept in its `last_error`. */
export type TaskCanceller = 'agent' | 'http';

/** A change to a task's live occurrence. */
export type TaskCommand = { op: 'pause' } | { op: 'resume' } | { op: 'cancel'; by: TaskCanceller } | ({ op: 'update' } & TaskChange);

/**
 * The live occurrence(s) of task `@taskId`: its first id keeps working for a recurring series whose first row has
 * long run.
 */
export const ACTIVE_TASK_MATCH = `(id = @taskId OR series_id = @taskId) AND kind = 'task' AND status IN ('pending', 'paused')`;

const CANCELLED_BY: Record<TaskCanceller, string> = {
  agent: 'cancelled by the agent',
  http: 'cancelled over HTTP',
};

/** SQL: the row is a cancelled task (not an error: left out of a session's last error). */
export const CANCELLED_TASK = `(kind = 'task' AND status = 'failed' AND last_error IN (${Object.values(CANCELLED_BY)
  .map((reason) => `'${reason}'`)
  .join(', ')}))`;

/** A task's time, read in `zone` unless it carries its own; `invalid-input` when it is not a time. */
export function taskTime(text: string, zone: string): string {
  const iso = parseTimeInZone(text, zone);
  if (!iso) {
    throw new PincerError('invalid-input', `processAfter "${text}" is not a time: write it like 2026-12-01T09:00 (read in ${zone}) or 2026-12-01T08:00Z`, {
      field: 'processAfter',
    });
  }
  return iso;
}

/** The next run of a cron expression after `after`; `invalid-input` with the reason when it is not accepted. */
export function nextOccurrence(expression: string, zone: string, after?: Date): string {
  const parsed = parseRecurrence(expression, zone, after);
  if (!parsed.ok) throw new PincerError('invalid-input', parsed.reason, { field: 'recurrence' });
  return parsed.cron.next().toDate().toISOString();
}

/**
 * A new task checked: its first run (`processAfter`, or the recurrence's next time) and its recurrence. The agent's
 * tool must say when (`runNow: false`); the HTTP API and the host's action run a task given neither at once.
 */
export function planTask(
  request: TaskRequest,
  zone: string,
  options: { runNow: boolean } = { runNow: false },
): { processAfter: string; recurrence: string | null; content: Record<string, unknown> } {
  if (request.processAfter === undefined && request.recurrence === undefined) {
    if (options.runNow) request = { ...request, processAfter: isoNow() };
    else throw new PincerError('invalid-input', 'give processAfter (when to run), or a recurrence, or both', { field: 'processAfter' });
  }
  const first = request.recurrence === undefined ? undefined : nextOccurrence(request.recurrence, zone);
  return {
    processAfter: request.processAfter === undefined ? first! : taskTime(request.processAfter, zone),
    recurrence: request.recurrence ?? null,
    content: { prompt: request.prompt, ...(request.script ? { script: request.script } : {}) },
  };
}

/** Where a task's answers go: the conversation that scheduled it. */
export interface TaskRouting {
  platformId: string | null;
  channelType: string | null;
  threadId: string | null;
}

/** Schedule a task in this session's DB (the agent's own tool): checked, within the session's task limit. */
export function scheduleTask(db: Database.Database, request: TaskRequest, routing: TaskRouting, zone: string): { id: string; processAfter: string } {
  const plan = planTask(request, zone);
  const full = taskLimitProblem(db);
  if (full) throw new PincerError('invalid-input', full);
  const id = randomUUID();
  insertInbound(db, { id, kind: 'task', content: plan.content, processAfter: plan.processAfter, recurrence: plan.recurrence, seriesId: id, ...routing });
  return { id, processAfter: plan.processAfter };
}

/** The next occurrence of a recurring task whose occurrence `row` ended (the host's sweep), due at `nextAt`. */
export function insertNextOccurrence(db: Database.Database, row: InboundRow, nextAt: string): void {
  insertInbound(db, {
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
}

/** Every active task of one session, soonest first. */
export function listTasks(db: Database.Database): InboundRow[] {
  return prepared(
    db,
    `SELECT * FROM messages_in WHERE kind = 'task' AND status IN ('pending', 'paused') ORDER BY julianday(coalesce(process_after, timestamp)), seq`,
  ).all() as InboundRow[];
}

/** The live occurrence of a task (newest first, should there be two). */
export function activeTaskRow(db: Database.Database, taskId: string): InboundRow | undefined {
  return prepared(db, `SELECT * FROM messages_in WHERE ${ACTIVE_TASK_MATCH} ORDER BY seq DESC LIMIT 1`).get({ taskId }) as InboundRow | undefined;
}

/** The refusal of a change to a task that has no live occurrence. */
export function noActiveTask(taskId: string): PincerError {
  return new PincerError(
    'not-found',
    `no active task "${taskId}": only a pending or paused task can be changed (it may be running, done or cancelled; list_tasks shows them)`,
  );
}

/**
 * Apply a change to the live occurrence of `taskId`, in one immediate transaction (the runner may pick the row at the
 * same moment). Returns the row after the change, null after a cancel. A cancel makes every live occurrence `failed`
 * (a task that will never run) with `last_error` saying who cancelled it, and drops its recurrence, so the sweep never
 * schedules a successor. Throws `not-found` when the task has no pending or paused occurrence, `invalid-input` for a
 * bad time or cron expression.
 */
export function changeTask(db: Database.Database, taskId: string, command: TaskCommand, zone: string): InboundRow | null {
  return db
    .transaction((): InboundRow | null => {
      const row = activeTaskRow(db, taskId);
      if (!row) throw noActiveTask(taskId);
      const now = isoNow();
      switch (command.op) {
        case 'cancel':
          prepared(
            db,
            `UPDATE messages_in SET status = 'failed', last_error = @reason, recurrence = NULL, status_changed = @now WHERE ${ACTIVE_TASK_MATCH}`,
          ).run({
            taskId,
            reason: CANCELLED_BY[command.by],
            now,
          });
          return null;
        case 'pause':
          if (row.status === 'pending') prepared(db, `UPDATE messages_in SET status = 'paused', status_changed = ? WHERE id = ?`).run(now, row.id);
          break;
        case 'resume':
          if (row.status === 'paused') {
            // A missed occurrence of a recurring task is skipped, not run late; a one-off task runs now.
            const due = row.recurrence && row.process_after && row.process_after < now ? nextOccurrence(row.recurrence, zone) : row.process_after;
            prepared(db, `UPDATE messages_in SET status = 'pending', process_after = ?, status_changed = ? WHERE id = ?`).run(due, now, row.id);
          }
          break;
        case 'update':
          updateRow(db, row, command, zone, now);
          break;
      }
      return prepared(db, 'SELECT * FROM messages_in WHERE id = ?').get(row.id) as InboundRow;
    })
    .immediate();
}

function updateRow(db: Database.Database, row: InboundRow, change: TaskChange, zone: string, now: string): void {
  const content = taskContent(row);
  if (change.prompt !== undefined) content.prompt = change.prompt;
  if (change.script === null) delete content.script;
  else if (change.script !== undefined) content.script = change.script;
  const recurrence = change.recurrence === undefined ? row.recurrence : change.recurrence;
  if (recurrence) nextOccurrence(recurrence, zone);
  let processAfter = row.process_after;
  // A recurring task given another rule runs next by the new rule (its due time came from the old one); a one-off
  // task given a rule keeps the time it was scheduled for, as its first run.
  if (change.processAfter === undefined && row.recurrence && recurrence && recurrence !== row.recurrence) processAfter = nextOccurrence(recurrence, zone);
  if (change.processAfter !== undefined) processAfter = taskTime(change.processAfter, zone);
  prepared(db, 'UPDATE messages_in SET content = ?, recurrence = ?, process_after = ?, status_changed = ? WHERE id = ?').run(
    JSON.stringify(content),
    recurrence,
    processAfter,
    now,
    row.id,
  );
}

/** A task row's content (`{prompt, script?}`); agent-written, so anything else reads as empty. */
export function taskContent(row: InboundRow): Record<string, unknown> {
  try {
    const content = JSON.parse(row.content) as unknown;
    return content && typeof content === 'object' && !Array.isArray(content) ? { ...(content as Record<string, unknown>) } : {};
  } catch {
    // agent-written content that is not JSON: the task reads as empty
    return {};
  }
}
