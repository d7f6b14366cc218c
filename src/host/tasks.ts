import { taskContent, type TaskCommand } from '../db/tasks.js';
import type { InboundRow } from '../db/types.js';
import { PincerError } from '../shared/errors.js';

/**
 * The host's board of every session's tasks, read and changed through each session's port (whose session applies the
 * change with the one owner of task rows, src/db/tasks.ts). The HTTP API's task routes come here.
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

/** One session as the task board sees it. */
export interface TaskSession {
  id: string;
  /** the session's port (its `tasks` and `changeTask`). */
  port: { tasks(): Promise<InboundRow[]>; changeTask(taskId: string, command: TaskCommand, timezone: string): Promise<InboundRow | null> };
  timezone: string;
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
