/**
 * Timestamps of the API: ISO 8601 in UTC with six fractional digits (`2026-11-22T14:13:37.123456Z`).
 */
export type Timestamp = string;

/**
 * The service's one clock (docs/architecture.md, "Time"): every reading of the current time in lib/, and every
 * wait that time drives (a runner's poll, a backoff within a claim, a webhook attempt's limit), goes through the
 * process's clock, so that what is due, when a lease or claim runs out and when a runner looks again move together.
 * Production runs on the system clock; tests run on a manual clock they advance (test/support/clock.ts).
 */
export interface Clock {
  /** Epoch milliseconds. */
  nowMs(): number;
  /** Epoch microseconds (the API's timestamps carry them). */
  nowUs(): number;
  /**
   * Resolves once `ms` of this clock's time have passed, or at once when `signal` aborts (a runner stopping); it
   * never rejects.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Real time: the wall clock, and timers. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  // JavaScript dates stop at milliseconds: the microseconds come from the high-resolution clock.
  nowUs: () => Math.floor((performance.timeOrigin + performance.now()) * 1000),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', done, { once: true });
    }),
};

let current: Clock = systemClock;

/** The process's clock. */
export const clock = (): Clock => current;

/**
 * The one seam of time: every reading and wait of lib/ from now on uses `next`; nothing: the system clock again.
 * Production never calls it (the system clock is the default); tests do, through test/support/clock.ts.
 * The clock is not threaded through every signature because nearly every write reads it (a timestamp, a due
 * time, a TTL): a runner and what it calls read one clock, whichever layer the reading is in.
 */
export function setClock(next?: Clock): void {
  current = next ?? systemClock;
}

/** Current time in epoch milliseconds. */
export function nowMillis(): number {
  return current.nowMs();
}

/** Current time in epoch microseconds. */
export function nowMicros(): number {
  return current.nowUs();
}

/** Waits `ms` of the clock's time (at once when `signal` aborts). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return current.sleep(ms, signal);
}

/**
 * `work`, or the error `late` makes once `ms` of real time (a timer, not the clock: a bound on waiting for I/O) passed
 * first. The timer keeps no process alive.
 */
export async function withTimeout<T>(work: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
    timer.unref();
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Calls `tick` every `ms` of the clock until `signal` aborts; a tick is not awaited (a slow one delays none). */
export function every(ms: number, signal: AbortSignal, tick: () => void): void {
  void (async () => {
    for (;;) {
      await sleep(ms, signal);
      if (signal.aborted) return;
      tick();
    }
  })();
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

/**
 * An ISO 8601 time with an offset (the API's own format is one): date, hours and minutes, optional seconds and
 * fraction (up to nanoseconds), `Z` or `±hh:mm`. Its shape only: parseInstant says whether it names an instant.
 */
export const ISO_TIME_WITH_OFFSET =
  /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/**
 * The instant (epoch microseconds, as every timestamp of the API) an ISO 8601 time with an offset names, or
 * undefined when it names none. Every field is checked against its range first: `Date.parse` rolls `2027-02-30`
 * over to March 2 and `24:00` to the next day, and a time a request sends is taken as written or refused, never
 * moved (decisions.md, "API keys"). The fraction is kept to the microsecond (`Date.parse` stops at the
 * millisecond); digits past it round up, so a time past another by any fraction is still past it.
 */
export function parseInstant(value: string): number | undefined {
  const match = ISO_TIME_WITH_OFFSET.exec(value);
  if (!match || !isCalendarDate(match[1] as string)) return undefined;
  const [hour, minute, second, , offsetHours, offsetMinutes] = match
    .slice(2)
    .map((part) => Number(part ?? 0));
  const inRange = (n: number | undefined, max: number) => n !== undefined && n <= max;
  if (!inRange(hour, 23) || !inRange(minute, 59) || !inRange(second, 59)) return undefined;
  if (!inRange(offsetHours, 23) || !inRange(offsetMinutes, 59)) return undefined;
  const fraction = match[5] ?? '';
  const ms = Date.parse(fraction ? value.replace(`.${fraction}`, '') : value);
  return Number.isNaN(ms) ? undefined : ms * 1000 + Math.ceil(Number(fraction.padEnd(9, '0')) / 1000);
}
