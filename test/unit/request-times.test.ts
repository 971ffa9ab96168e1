import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { CreateKeySchema } from '#lib/accounts/key-schemas.ts';
import { parseInstant } from '#lib/time.ts';
import { RedeliverSchema } from '#lib/webhooks/schemas.ts';

/**
 * Times a request sends (decisions.md, "API keys": a timestamp that names no real instant is a 422, never rolled
 * over), everywhere one is parsed: a key's `expires_at`, a redelivery's `since`.
 */
const NO_INSTANT = [
  '2099-02-30T00:00:00Z',
  '2100-02-29T00:00:00Z',
  '2099-04-31T12:00:00+02:00',
  '2099-13-01T00:00:00Z',
  '2099-01-01T24:00:00Z',
  '2099-01-01T23:60:00Z',
  '2099-01-01T23:59:60Z',
  '2099-01-01T00:00:00+24:00',
  '2099-01-01T00:00:00-01:60',
];

describe('parseInstant', () => {
  it('answers the instant a time with an offset names, in epoch microseconds: the fraction kept to the µs', () => {
    const us = (ms: number) => ms * 1000;
    expect(parseInstant('2096-02-29T23:59:59.123456Z')).toBe(
      us(Date.UTC(2096, 1, 29, 23, 59, 59, 123)) + 456,
    );
    expect(parseInstant('2099-01-01T02:00+02:00')).toBe(us(Date.UTC(2099, 0, 1)));
    expect(parseInstant('2099-01-01T00:00:00.5Z')).toBe(us(Date.UTC(2099, 0, 1, 0, 0, 0, 500)));
    // Past the microsecond, rounded up: a time past another by any fraction stays past it.
    expect(parseInstant('2099-01-01T00:00:00.123456789-01:30')).toBe(
      us(Date.UTC(2099, 0, 1, 1, 30, 0, 123)) + 457,
    );
    expect(parseInstant('2099-01-01T00:00:00.000000001Z')).toBe(us(Date.UTC(2099, 0, 1)) + 1);
  });

  it('names no instant for a day, hour, minute, second or offset out of its range, nor without an offset', () => {
    for (const value of [...NO_INSTANT, '2099-01-01T00:00:00', '2099-01-01', 'soon']) {
      expect(parseInstant(value), value).toBeUndefined();
    }
  });
});

describe('the request fields that take a time', () => {
  it("refuse a time that names no real instant: a key's expires_at, a redelivery's since", () => {
    for (const value of NO_INSTANT) {
      const key = v.safeParse(CreateKeySchema, { name: 'k', scopes: ['*'], expires_at: value });
      expect(key.success, value).toBe(false);
      if (!value.endsWith('Z')) continue;
      // `since` is UTC, as the API writes its timestamps.
      expect(v.safeParse(RedeliverSchema, { since: value }).success, value).toBe(false);
    }
  });

  it('take a real one', () => {
    const key = v.safeParse(CreateKeySchema, {
      name: 'k',
      scopes: ['*'],
      expires_at: '2096-02-29T00:00:00Z',
    });
    expect(key.success && key.output.expires_at).toBe(Date.UTC(2096, 1, 29) * 1000);
    expect(v.safeParse(RedeliverSchema, { since: '2024-02-29T00:00:00.000001Z' }).success).toBe(true);
  });
});
