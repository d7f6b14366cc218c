import type { CronExpression } from 'cron-parser';
import { createRequire } from 'node:module';

/**
 * The one validator of recurring-task schedules, used by every entry point that takes one (the MCP task tools, the
 * HTTP API, the host's task actions): a cron expression of 5 fields (or an alias such as `@daily`), read in the
 * session's time zone, running at most once a minute.
 */
export type ParsedCron = { ok: true; cron: CronExpression } | { ok: false; reason: string };

type CronParser = (typeof import('cron-parser'))['CronExpressionParser'];
let parser: CronParser | undefined;

/**
 * cron-parser, with luxon under it (≈ 30 ms and a few MiB to load), loaded the first time a schedule is read: most
 * starts of the host, a runner or the MCP server never read one. Required from node_modules (it is CommonJS), so the
 * load is synchronous like the callers.
 */
function cronParser(): CronParser {
  parser ??= (createRequire(import.meta.url)('cron-parser') as typeof import('cron-parser')).CronExpressionParser;
  return parser;
}

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
    cron = cronParser().parse(trimmed, { tz: timeZone, ...(after ? { currentDate: after } : {}) });
  } catch (err) {
    return { ok: false, reason: `recurrence "${expression}" is not a valid cron expression: ${(err as Error).message}` };
  }
  if (cron.fields.second.values.length !== 1) {
    return { ok: false, reason: `recurrence "${expression}" runs more than once a minute: the shortest period is one minute` };
  }
  return { ok: true, cron };
}
