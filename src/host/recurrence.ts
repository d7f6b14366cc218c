import { CronExpressionParser } from 'cron-parser';
import { HostError } from './errors.js';

/**
 * Cron schedules of recurring tasks, read in the session's time zone (a task "every day at 9" runs at 9 local time).
 * Invalid expressions are refused when a task is scheduled or updated, with the parser's reason.
 */
export function nextOccurrence(expression: string, timeZone: string, after: Date = new Date()): Date {
  try {
    return CronExpressionParser.parse(expression, { currentDate: after, tz: timeZone }).next().toDate();
  } catch (err) {
    throw new HostError('invalid-input', `invalid cron expression "${expression}": ${(err as Error).message}`, 'recurrence');
  }
}

/** Throw `HostError('invalid-input')` unless `expression` is a cron expression. */
export function validateCron(expression: string, timeZone: string): void {
  nextOccurrence(expression, timeZone);
}
