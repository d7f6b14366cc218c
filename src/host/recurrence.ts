import { parseRecurrence } from '../shared/cron.js';
import { PincerError } from '../shared/errors.js';

/**
 * Cron schedules of recurring tasks, read in the session's time zone (a task "every day at 9" runs at 9 local time).
 * Expressions are checked by the one shared rule (src/shared/cron.ts: 5 fields, at most once a minute) and refused
 * when a task is scheduled or updated, with the reason.
 */
export function nextOccurrence(expression: string, timeZone: string, after: Date = new Date()): Date {
  const parsed = parseRecurrence(expression, timeZone, after);
  if (!parsed.ok) throw new PincerError('invalid-input', parsed.reason, { field: 'recurrence' });
  return parsed.cron.next().toDate();
}

/** Throw `PincerError('invalid-input')` unless `expression` is an accepted cron expression. */
export function validateCron(expression: string, timeZone: string): void {
  nextOccurrence(expression, timeZone);
}
