import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { prepared } from '../db/connection.js';
import { insertInbound, insertOutbound } from '../db/messages.js';
import type { InboundRow } from '../db/types.js';
import { parseRecurrence } from '../shared/cron.js';
import { formatTime } from '../shared/time.js';
import { isoNow, parseTimeInZone } from '../shared/time.js';
import { batchRouting } from './routing.js';
import { label, MAX_TEXT_CHARS, text } from './schemas.js';
import { textResult, type ToolContext } from './types.js';
import { PincerError } from '../shared/errors.js';
import { taskLimitProblem } from '../db/task-limit.js';
import { ACTIVE_TASK_MATCH as ACTIVE_TASK, cancelTask } from '../db/tasks.js';

/**
 * The task tools (seed "schedule_task" … "update_task"). A task is a `task` row the session writes to itself; a
 * recurring one carries a cron expression and a `series_id` shared by all its occurrences (the host writes the next
 * one). Every tool finds the live occurrence with the seed's match, so the first id keeps working for the series.
 * Times without a zone, and cron expressions, are read in the session time zone.
 */
const taskId = label('taskId').describe('the task id returned by schedule_task or shown by list_tasks');
const processAfter = label('processAfter', 64).describe(
  'when to run: "2026-12-01T09:00" is read in the session time zone; "…Z" or "…+02:00" as written',
);
const recurrence = label('recurrence').describe(
  'cron expression with 5 fields (minute hour day-of-month month day-of-week) in the session time zone, e.g. "0 9 * * 1-5" = weekdays at 09:00',
);
const script = text('script', MAX_TEXT_CHARS, 'keep the script short').describe(
  'bash run before the task; its last stdout line {"wakeAgent": true|false, "data": …} decides whether you are woken',
);

export function registerTaskTools(server: McpServer, ctx: ToolContext): void {
  const { db, config } = ctx;
  const zone = config.timeZone;

  server.registerTool(
    'schedule_task',
    {
      description:
        'Schedule a task for yourself: at processAfter (and then on every recurrence) you receive the prompt as a ' +
        `[SCHEDULED TASK] in this conversation. Times without a zone are in ${zone}. Returns the task id.`,
      inputSchema: {
        prompt: text('prompt').describe('what to do when the task runs'),
        processAfter: processAfter.optional().describe(`${processAfter.description} (default with recurrence: its next time)`),
        recurrence: recurrence.optional(),
        script: script.optional(),
      },
    },
    ({ prompt, processAfter, recurrence, script }) => {
      if (processAfter === undefined && recurrence === undefined) {
        throw new PincerError('invalid-input', 'give processAfter (when to run), or a recurrence, or both');
      }
      const cron = recurrence === undefined ? undefined : parseCron(recurrence, zone);
      const full = taskLimitProblem(db);
      if (full) throw new PincerError('invalid-input', full);
      const runAt = processAfter === undefined ? cron!.next().toISOString()! : parseTime(processAfter, zone);
      const routing = batchRouting(db);
      const id = randomUUID();
      insertInbound(db, {
        id,
        kind: 'task',
        content: { prompt, ...(script !== undefined && { script }) },
        processAfter: runAt,
        recurrence: recurrence ?? null,
        seriesId: id,
        platformId: routing.platformId,
        channelType: routing.channelType,
        threadId: routing.threadId,
      });
      const when = runAt <= isoNow() ? 'now (the time given has passed)' : `${formatTime(runAt, zone)} (${zone})`;
      return textResult(`Task ${id} scheduled: first run ${when}${recurrence ? `, then "${recurrence}"` : ''}.`);
    },
  );

  server.registerTool(
    'list_tasks',
    {
      description: 'List your active scheduled tasks (pending or paused), one line each, with the id the other task tools take.',
      inputSchema: {},
    },
    () => {
      const rows = prepared(
        db,
        `SELECT * FROM messages_in WHERE kind = 'task' AND status IN ('pending', 'paused')
         ORDER BY julianday(coalesce(process_after, timestamp)), seq`,
      ).all() as InboundRow[];
      if (rows.length === 0) return textResult('No scheduled tasks.');
      const lines = rows.map((row) => {
        const when = row.process_after ? formatTime(row.process_after, zone) : 'now';
        const every = row.recurrence ? ` · recurs "${row.recurrence}"` : '';
        return `- ${row.series_id ?? row.id} [${row.status}] next ${when}${every} · ${taskPrompt(row)}`;
      });
      return textResult(`Scheduled tasks (times in ${zone}):\n${lines.join('\n')}`);
    },
  );

  server.registerTool(
    'cancel_task',
    { description: 'Cancel a scheduled task; a recurring task stops recurring.', inputSchema: { taskId } },
    ({ taskId }) => {
      if (cancelTask(db, taskId, 'agent') === 0) throw noActiveTask(taskId);
      return textResult(`Task ${taskId} cancelled.`);
    },
  );

  server.registerTool(
    'pause_task',
    { description: 'Pause a scheduled task: it does not run until resume_task.', inputSchema: { taskId } },
    ({ taskId }) => {
      const tasks = activeTasks(db, taskId);
      if (tasks.every((row) => row.status === 'paused')) return textResult(`Task ${taskId} is already paused.`);
      prepared(db, `UPDATE messages_in SET status = 'paused', status_changed = @now WHERE ${ACTIVE_TASK} AND status = 'pending'`).run(
        { taskId, now: isoNow() },
      );
      return textResult(`Task ${taskId} paused.`);
    },
  );

  server.registerTool(
    'resume_task',
    {
      description: 'Resume a paused task. A recurring task whose time passed while paused runs at its next time.',
      inputSchema: { taskId },
    },
    ({ taskId }) => {
      const resumed = db.transaction(() => {
        const paused = activeTasks(db, taskId).filter((row) => row.status === 'paused');
        const now = isoNow();
        for (const row of paused) {
          // A missed occurrence of a recurring task is skipped, not run late; a one-off task runs now.
          const due = row.recurrence && row.process_after && row.process_after < now
            ? parseCron(row.recurrence, zone).next().toISOString()!
            : row.process_after;
          prepared(db, `UPDATE messages_in SET status = 'pending', status_changed = ?, process_after = ? WHERE id = ?`).run(
            now,
            due,
            row.id,
          );
        }
        return paused;
      }).immediate();
      if (resumed.length === 0) return textResult(`Task ${taskId} is not paused.`);
      const next = resumed[0]!.process_after;
      return textResult(`Task ${taskId} resumed${next ? `; next run ${formatTime(next, zone)} (${zone})` : ''}.`);
    },
  );

  server.registerTool(
    'update_task',
    {
      description:
        'Change a scheduled task: any of prompt, processAfter, recurrence, script (omitted fields stay as they are; ' +
        'an empty recurrence or script removes it). The host applies the change and confirms with a system message.',
      inputSchema: {
        taskId,
        prompt: text('prompt').optional().describe('the new prompt'),
        processAfter: processAfter.optional(),
        recurrence: z.string().max(200).optional().describe(`${recurrence.description}; "" makes the task one-off`),
        script: z.string().max(MAX_TEXT_CHARS).optional().describe('the new pre-task script; "" removes it'),
      },
    },
    ({ taskId, prompt, processAfter, recurrence, script }) => {
      activeTasks(db, taskId);
      const changes = {
        ...(prompt !== undefined && { prompt }),
        ...(processAfter !== undefined && { processAfter: parseTime(processAfter, zone) }),
        ...(recurrence !== undefined && { recurrence: optionalCron(recurrence, zone) }),
        ...(script !== undefined && { script: script.trim() === '' ? null : script }),
      };
      if (Object.keys(changes).length === 0) {
        throw new PincerError('invalid-input', 'nothing to change: give prompt, processAfter, recurrence or script');
      }
      const { seq } = insertOutbound(db, {
        kind: 'system',
        content: { action: 'update_task', taskId, ...changes },
        routing: batchRouting(db),
      });
      return textResult(`Update of task ${taskId} sent to the host (request ${seq}); it confirms with a system message.`);
    },
  );
}

/** The live occurrence(s) of a task; a tool error when there is none. */
function activeTasks(db: Database.Database, taskId: string): InboundRow[] {
  const rows = prepared(db, `SELECT * FROM messages_in WHERE ${ACTIVE_TASK} ORDER BY seq`).all({ taskId }) as InboundRow[];
  if (rows.length === 0) throw noActiveTask(taskId);
  return rows;
}

function noActiveTask(taskId: string): PincerError {
  return new PincerError('not-found', `there is no active task with id ${taskId} (list_tasks shows them)`);
}

function parseTime(text: string, zone: string): string {
  const iso = parseTimeInZone(text, zone);
  if (!iso) {
    throw new PincerError('invalid-input', `processAfter "${text}" is not a time: write it like 2026-12-01T09:00 (${zone}) or 2026-12-01T08:00Z`);
  }
  return iso;
}

/** An update's recurrence: "" removes it, anything else must be a valid cron expression. */
function optionalCron(expression: string, zone: string): string | null {
  if (expression.trim() === '') return null;
  parseCron(expression, zone);
  return expression;
}

/** A cron expression, validated by the shared rule (src/shared/cron.ts). */
function parseCron(expression: string, zone: string) {
  const parsed = parseRecurrence(expression, zone);
  if (!parsed.ok) throw new PincerError('invalid-input', parsed.reason);
  return parsed.cron;
}

function taskPrompt(row: InboundRow): string {
  try {
    const prompt = String((JSON.parse(row.content) as { prompt?: unknown }).prompt ?? '');
    return prompt.length > 100 ? `${prompt.slice(0, 100)}…` : prompt;
  } catch { // content that is not JSON: shown as unreadable
    return '(unreadable content)';
  }
}
