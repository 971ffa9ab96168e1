/**
 * Timestamps of the API: ISO 8601 in UTC with six fractional digits (`2026-11-22T14:13:37.123456Z`).
 * JavaScript dates stop at milliseconds, so the microseconds come from the high-resolution clock.
 */
export type Timestamp = string;

const systemClock = () => Math.floor((performance.timeOrigin + performance.now()) * 1000);
let clock: () => number = systemClock;

/** Current time in epoch microseconds. */
export function nowMicros(): number {
  return clock();
}

/** Tests only: run with a fixed clock (epoch microseconds); pass nothing to return to the system clock. */
export function setClockForTests(fixed?: () => number): void {
  clock = fixed ?? systemClock;
}

export function formatTimestamp(epochMicros: number): Timestamp {
  const millis = Math.floor(epochMicros / 1000);
  const micros = epochMicros - millis * 1000;
  const iso = new Date(millis).toISOString(); // 2026-11-22T14:13:37.123Z
  return `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
}

/** Epoch microseconds of a timestamp made by formatTimestamp (the inverse). */
export function parseTimestamp(timestamp: Timestamp): number {
  return Date.parse(`${timestamp.slice(0, 23)}Z`) * 1000 + Number(timestamp.slice(23, 26));
}

export function now(): Timestamp {
  return formatTimestamp(nowMicros());
}

/** A real calendar date written `YYYY-MM-DD` (no 2026-02-30). */
export function isCalendarDate(value: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
