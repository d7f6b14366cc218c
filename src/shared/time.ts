import { rawSetting } from './settings-load.js';
/** Times in the session DB are ISO-8601 UTC strings with milliseconds, e.g. 2026-11-30T10:51:27.000Z. */
export function isoNow(): string {
  return new Date().toISOString();
}

/**
 * Parse a time a person or the agent wrote. A string without a zone ("2026-12-01 09:00") is read in `timeZone`,
 * as the agent means the times it gives; a string with `Z` or an offset is taken as written.
 * Returns the ISO UTC form, or null when the text is not a time.
 */
export function parseTimeInZone(text: string, timeZone: string): string | null {
  const trimmed = text.trim();
  const hasZone = /(?:[zZ]|[+-]\d{2}:?\d{2})$/.test(trimmed);
  const local = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/.exec(trimmed);
  if (hasZone || !local) {
    const ms = Date.parse(trimmed);
    return Number.isNaN(ms) || !hasZone ? null : new Date(ms).toISOString();
  }
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '0'] = local;
  const asUtc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), Number(frac.padEnd(3, '0')));
  if (Number.isNaN(asUtc)) return null;
  // The zone's offset at that wall-clock time: format the UTC guess in the zone and take the difference.
  const offset = zoneOffsetMs(asUtc, timeZone);
  const guess = asUtc - offset;
  // Across a DST change the offset at the corrected instant can differ; one more step settles it.
  return new Date(asUtc - zoneOffsetMs(guess, timeZone)).toISOString();
}

function zoneOffsetMs(utcMs: number, timeZone: string): number {
  const t = wallClock(new Date(utcMs), timeZone);
  const wall = Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
  return wall - Math.floor(utcMs / 1000) * 1000;
}

/** True when `timeZone` is an IANA zone this Node knows. */
export function isValidTimeZone(timeZone: string): boolean {
  if (UTC_ZONES.has(timeZone) || isProcessZone(timeZone)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    // Intl refuses the name: not a time zone
    return false;
  }
}

/**
 * The first Intl.DateTimeFormat of a process loads ICU's locale and calendar data: +8 MiB of memory and ~20 ms for a
 * runner (docs/performance.md). Zones that are UTC by another name (tzdb "backward"), and the process's own zone (TZ,
 * which the host sets for every runner), are read from Date's own fields instead; other zones use Intl.
 */
const UTC_ZONES = new Set([
  'UTC',
  'Etc/UTC',
  'UCT',
  'Etc/UCT',
  'Universal',
  'Etc/Universal',
  'Zulu',
  'Etc/Zulu',
  'GMT',
  'Etc/GMT',
  'GMT0',
  'Etc/GMT0',
  'GMT+0',
  'Etc/GMT+0',
  'GMT-0',
  'Etc/GMT-0',
  'Greenwich',
  'Etc/Greenwich',
]);

/**
 * Whether `timeZone` is TZ and V8 understood it, so Date's local fields are that zone's wall clock. V8 reads a TZ it
 * does not know as UTC; every zone but UTC's aliases had a local mean time in 1800, so a zero offset then means TZ
 * was not understood (or is UTC, handled above), and Intl decides.
 */
function isProcessZone(timeZone: string): boolean {
  return timeZone === rawSetting(process.env, 'TZ') && new Date(Date.UTC(1800, 0, 1)).getTimezoneOffset() !== 0;
}

/** The system's zone when TZ is not set (/etc/localtime, which only ICU reads). */
export function systemTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** One formatter per zone: building an Intl.DateTimeFormat costs ~20× more than using one (bench profile). */
const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock fields of `date` in `timeZone` (24-hour), from one cached formatter per zone. */
function wallClock(date: Date, timeZone: string): Record<'year' | 'month' | 'day' | 'hour' | 'minute' | 'second', number> {
  if (UTC_ZONES.has(timeZone)) {
    return {
      year: date.getUTCFullYear(),
      month: date.getUTCMonth() + 1,
      day: date.getUTCDate(),
      hour: date.getUTCHours(),
      minute: date.getUTCMinutes(),
      second: date.getUTCSeconds(),
    };
  }
  if (isProcessZone(timeZone)) {
    return {
      year: date.getFullYear(),
      month: date.getMonth() + 1,
      day: date.getDate(),
      hour: date.getHours(),
      minute: date.getMinutes(),
      second: date.getSeconds(),
    };
  }
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  const parts = formatter.formatToParts(date);
  const get = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((p) => p.type === type)?.value);
  return { year: get('year'), month: get('month'), day: get('day'), hour: get('hour'), minute: get('minute'), second: get('second') };
}

/** `2026-01-15 10:00`: a time as the agent and people read it, in the session zone. */
export function formatTime(iso: string, timeZone: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const t = wallClock(date, timeZone);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${t.year}-${two(t.month)}-${two(t.day)} ${two(t.hour)}:${two(t.minute)}`;
}

/** Order of two ISO UTC times of the session DB (plain code-unit order; localeCompare would load ICU's collation). */
export function compareIso(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
