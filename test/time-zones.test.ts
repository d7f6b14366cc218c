import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { compareIso, formatTime, isValidTimeZone, parseTimeInZone } from '../src/shared/time.js';

/**
 * Times in the session zone without ICU's locale data: UTC and the process's own zone (TZ) are read from Date's own
 * fields, every other zone through Intl. The fields must be the same either way, DST changes included.
 */
const savedTz = process.env.TZ;
afterEach(() => {
  process.env.TZ = savedTz;
});

/** What Intl says, the reference the fast paths must match. */
function intlWallClock(iso: string, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
  }).formatToParts(new Date(iso));
  const get = (type: string): string => parts.find((p) => p.type === type)!.value;
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}`;
}

const INSTANTS = [
  '2026-01-15T18:00:00.000Z',
  '2026-03-29T00:59:59.000Z', // just before the EU spring change
  '2026-03-29T01:00:00.000Z',
  '2026-11-01T05:30:00.000Z', // US fall change
  '2026-10-03T15:45:00.000Z', // Lord Howe's half-hour change
  '1999-12-31T23:59:00.000Z',
];

describe('time zones', () => {
  it.each(['UTC', 'Etc/UTC', 'GMT', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'])(
    'formats and parses %s as Intl does, as the process zone and as another zone',
    (zone) => {
      for (const tz of [zone, 'Asia/Tokyo']) {
        process.env.TZ = tz;
        expect(isValidTimeZone(zone)).toBe(true);
        for (const iso of INSTANTS) {
          const local = intlWallClock(iso, zone);
          expect(formatTime(iso, zone)).toBe(local);
          // A wall-clock time read back in the zone gives the instant again (minutes; the formatter drops seconds).
          expect(parseTimeInZone(local, zone)).toBe(new Date(Math.floor(Date.parse(iso) / 60_000) * 60_000).toISOString());
        }
      }
    },
  );

  it.each(['Mars/Olympus', 'europe/berlin-x', ''])('refuses %j, also when it is TZ', (zone) => {
    process.env.TZ = zone;
    expect(isValidTimeZone(zone)).toBe(false);
  });

  it('reads UTC and the process zone without Intl, and only other zones with it', () => {
    const script = `
      const { formatTime, isValidTimeZone } = await import(${JSON.stringify(new URL('../dist/src/shared/time.js', import.meta.url).href)});
      globalThis.Intl.DateTimeFormat = function () { throw new Error('Intl used'); };
      const out = [isValidTimeZone('Europe/Berlin'), isValidTimeZone('UTC'), formatTime('2026-07-01T10:00:00Z', 'Europe/Berlin'), formatTime('2026-07-01T10:00:00Z', 'Etc/UTC')];
      try { formatTime('2026-07-01T10:00:00Z', 'Asia/Tokyo'); } catch (err) { out.push(err.message); }
      console.log(JSON.stringify(out));`;
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, TZ: 'Europe/Berlin' }, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual([true, true, '2026-07-01 12:00', '2026-07-01 10:00', 'Intl used']);
  });

  it('orders ISO times by instant', () => {
    const times = ['2026-01-15T18:00:00.001Z', '2025-12-31T23:59:59.999Z', '2026-01-15T18:00:00.000Z'];
    expect([...times].sort(compareIso)).toEqual([times[1], times[2], times[0]]);
    expect(compareIso(times[0]!, times[0]!)).toBe(0);
  });
});
