import { CronExpressionParser, type CronExpression } from 'cron-parser';

/**
 * The one validator of recurring-task schedules, used by every entry point that takes one (the MCP task tools, the
 * HTTP API, the host's task actions): a cron expression of 5 fields (or an alias such as `@daily`), read in the
 * session's time zone, running at most once a minute.
 */
export type ParsedCron = { ok: true; cron: CronExpression } | { ok: false; reason: string };

export function parseRecurrence(expression: string, timeZone: string, after?: Date): ParsedCron {
  const trimmed = expression.trim();
  if (!trimmed.startsWith('@') && trimmed.split(/\s+/).length !== 5) {
    return {
      ok: false,
      reason: `recurrence "${expression}" is not a cron expression of 5 fields (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-5"`,
    };
  }
  let cron: CronExpression;
  try {
    cron = CronExpressionParser.parse(trimmed, { tz: timeZone, ...(after ? { currentDate: after } : {}) });
  } catch (err) {
    return { ok: false, reason: `recurrence "${expression}" is not a valid cron expression: ${(err as Error).message}` };
  }
  if (cron.fields.second.values.length !== 1) {
    return { ok: false, reason: `recurrence "${expression}" runs more than once a minute: the shortest period is one minute` };
  }
  return { ok: true, cron };
}
