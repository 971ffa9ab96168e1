import { type BusinessHours, WEEKDAYS, type Weekday } from '#lib/accounts/types.ts';

/**
 * Counting a service-level target inside a business-hours calendar: an IANA time zone (daylight-saving
 * changes included), weekly opening intervals in local time, and holiday dates. Pure: epoch microseconds in,
 * epoch microseconds out.
 */
const MINUTE_US = 60_000_000;
/** A calendar with no opening at all would never reach its target; stop looking after this many days. */
const MAX_DAYS = 3 * 366;

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

interface LocalParts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

function localParts(epochMs: number, timeZone: string): LocalParts {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(epochMs))) {
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  }
  return parts as unknown as LocalParts;
}

/** Offset of the zone from UTC at an instant, in ms (Paris in winter: +3_600_000). */
function offsetMs(epochMs: number, timeZone: string): number {
  const p = localParts(epochMs, timeZone);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return asUtc - Math.floor(epochMs / 1000) * 1000;
}

/** The instant of a local wall-clock time. In a DST gap the time is moved forward; in an overlap, the first. */
export function zonedToEpochMs(
  date: { year: number; month: number; day: number },
  minutes: number,
  timeZone: string,
) {
  const naive = Date.UTC(date.year, date.month - 1, date.day, 0, minutes);
  const first = naive - offsetMs(naive, timeZone);
  const second = naive - offsetMs(first, timeZone);
  return Math.min(first, second);
}

const toMinutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
const isoDate = (d: { year: number; month: number; day: number }) =>
  `${d.year}-${String(d.month).padStart(2, '0')}-${String(d.day).padStart(2, '0')}`;

function weekdayOf(d: { year: number; month: number; day: number }): Weekday {
  const index = (new Date(Date.UTC(d.year, d.month - 1, d.day)).getUTCDay() + 6) % 7; // 0 = Monday
  return WEEKDAYS[index] as Weekday;
}

function nextDate(d: { year: number; month: number; day: number }) {
  const next = new Date(Date.UTC(d.year, d.month - 1, d.day + 1));
  return { year: next.getUTCFullYear(), month: next.getUTCMonth() + 1, day: next.getUTCDate() };
}

/** The instant `targetMinutes` of opening time after `startUs`. */
export function addBusinessMinutes(startUs: number, targetMinutes: number, calendar: BusinessHours): number {
  const holidays = new Set(calendar.holidays);
  let remainingUs = targetMinutes * MINUTE_US;
  const startLocal = localParts(Math.floor(startUs / 1000), calendar.timeZone);
  let date = { year: startLocal.year, month: startLocal.month, day: startLocal.day };
  for (let i = 0; i < MAX_DAYS; i++, date = nextDate(date)) {
    if (holidays.has(isoDate(date))) continue;
    const intervals = [...(calendar.weekly[weekdayOf(date)] ?? [])].sort((a, b) => a[0].localeCompare(b[0]));
    for (const [open, close] of intervals) {
      const openUs = zonedToEpochMs(date, toMinutes(open), calendar.timeZone) * 1000;
      const closeUs = zonedToEpochMs(date, toMinutes(close), calendar.timeZone) * 1000;
      const from = Math.max(openUs, startUs);
      if (from >= closeUs) continue;
      if (closeUs - from >= remainingUs) return from + remainingUs;
      remainingUs -= closeUs - from;
    }
  }
  throw new Error('The business-hours calendar has no opening time within three years');
}
