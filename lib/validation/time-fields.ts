import * as v from 'valibot';
import { ISO_TIME_WITH_OFFSET, nowMicros, parseInstant } from '#lib/time.ts';
import { attribute } from '#lib/validation.ts';

/** The longest ISO 8601 time taken (lib/time.ts, ISO_TIME_WITH_OFFSET). */
export const MAX_TIME_LENGTH = 35;

/**
 * A time in the future (a key's `expires_at`, an agent's `status_until`): an ISO 8601 time with an offset, the API's
 * own format among them, out as epoch microseconds, kept as sent (`.123456` too). A time that names no real instant
 * (2027-02-30, 24:00) is refused, never rolled over. The rules; `futureTimeWire` is what a client sends.
 */
export function futureTime(field: string) {
  return v.pipe(
    instantTime(field),
    v.check((us) => us > nowMicros(), `The ${attribute(field)} field must be a time in the future.`),
  );
}

/** Any time (a backtest's window): an ISO 8601 time with an offset, out as epoch microseconds (as futureTime). */
export function instantTime(field: string) {
  const name = attribute(field);
  return v.pipe(
    v.string(`The ${name} field must be a string.`),
    v.maxLength(MAX_TIME_LENGTH, `The ${name} field must not be greater than ${MAX_TIME_LENGTH} characters.`),
    v.check(
      (s) => parseInstant(s) !== undefined,
      `The ${name} field must be an ISO 8601 time with an offset, such as 2027-01-31T00:00:00.000000Z.`,
    ),
    v.transform((s) => parseInstant(s) as number),
  );
}

/** What a client sends for futureTime and instantTime. */
export const futureTimeWire = v.pipe(v.string(), v.maxLength(MAX_TIME_LENGTH), v.regex(ISO_TIME_WITH_OFFSET));
