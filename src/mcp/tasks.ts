import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { insertOutbound } from '../db/messages.js';
import { activeTaskRow, changeTask, listTasks, nextOccurrence, noActiveTask, scheduleTask, taskContent, taskTime } from '../db/tasks.js';
import type { InboundRow } from '../db/types.js';
import { PincerError } from '../shared/errors.js';
import { formatTime, isoNow } from '../shared/time.js';
import { batchRouting } from './routing.js';
import { label, MAX_TEXT_CHARS, text } from './schemas.js';
import { textResult, type ToolContext } from './types.js';

/**
 * The task tools (schedule_task … update_task): the agent's transport to the one owner of task rows (src/db/tasks.ts),
 * which checks times and cron expressions and words the refusals. Times without a zone, and cron expressions, are
 * read in the session time zone.
 */

const taskId = label('taskId').describe('the task id returned by schedule_task or shown by list_tasks');
const processAfter = label('processAfter', 64).describe('when to run: "2026-12-01T09:00" is read in the session time zone; "…Z" or "…+02:00" as written');
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
      const task = scheduleTask(db, { prompt, processAfter, recurrence, script }, batchRouting(db), zone);
      const when = task.processAfter <= isoNow() ? 'now (the time given has passed)' : `${formatTime(task.processAfter, zone)} (${zone})`;
      return textResult(`Task ${task.id} scheduled: first run ${when}${recurrence ? `, then "${recurrence}"` : ''}.`);
    },
  );

  server.registerTool(
    'list_tasks',
    {
      description: 'List your active scheduled tasks (pending or paused), one line each, with the id the other task tools take.',
      inputSchema: {},
    },
    () => {
      const rows = listTasks(db);
      if (rows.length === 0) return textResult('No scheduled tasks.');
      const lines = rows.map((row) => {
        const when = row.process_after ? formatTime(row.process_after, zone) : 'now';
        const every = row.recurrence ? ` · recurs "${row.recurrence}"` : '';
        return `- ${row.series_id ?? row.id} [${row.status}] next ${when}${every} · ${taskPrompt(row)}`;
      });
      return textResult(`Scheduled tasks (times in ${zone}):\n${lines.join('\n')}`);
    },
  );

  server.registerTool('cancel_task', { description: 'Cancel a scheduled task; a recurring task stops recurring.', inputSchema: { taskId } }, ({ taskId }) => {
    changeTask(db, taskId, { op: 'cancel', by: 'agent' }, zone);
    return textResult(`Task ${taskId} cancelled.`);
  });

  server.registerTool('pause_task', { description: 'Pause a scheduled task: it does not run until resume_task.', inputSchema: { taskId } }, ({ taskId }) => {
    if (liveRow(taskId).status === 'paused') return textResult(`Task ${taskId} is already paused.`);
    changeTask(db, taskId, { op: 'pause' }, zone);
    return textResult(`Task ${taskId} paused.`);
  });

  server.registerTool(
    'resume_task',
    {
      description: 'Resume a paused task. A recurring task whose time passed while paused runs at its next time.',
      inputSchema: { taskId },
    },
    ({ taskId }) => {
      if (liveRow(taskId).status !== 'paused') return textResult(`Task ${taskId} is not paused.`);
      const next = changeTask(db, taskId, { op: 'resume' }, zone)?.process_after;
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
      liveRow(taskId);
      const oneOff = recurrence !== undefined && recurrence.trim() === '';
      if (recurrence !== undefined && !oneOff) nextOccurrence(recurrence, zone);
      const changes = {
        ...(prompt !== undefined && { prompt }),
        ...(processAfter !== undefined && { processAfter: taskTime(processAfter, zone) }),
        ...(recurrence !== undefined && { recurrence: oneOff ? null : recurrence }),
        ...(script !== undefined && { script: script.trim() === '' ? null : script }),
      };
      if (Object.keys(changes).length === 0) throw new PincerError('invalid-input', 'nothing to change: give prompt, processAfter, recurrence or script');
      const { seq } = insertOutbound(db, { kind: 'system', content: { action: 'update_task', taskId, ...changes }, routing: batchRouting(db) });
      return textResult(`Update of task ${taskId} sent to the host (request ${seq}); it confirms with a system message.`);
    },
  );

  /** The live occurrence of a task; `not-found` when there is none. */
  function liveRow(taskId: string): InboundRow {
    const row = activeTaskRow(db, taskId);
    if (!row) throw noActiveTask(taskId);
    return row;
  }
}

function taskPrompt(row: InboundRow): string {
  const { prompt: text } = taskContent(row);
  const prompt = typeof text === 'string' ? text : '(unreadable content)';
  return prompt.length > 100 ? `${prompt.slice(0, 100)}…` : prompt;
}
