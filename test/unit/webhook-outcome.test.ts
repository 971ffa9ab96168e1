import { describe, expect, it } from 'vitest';
import { type Answer, DISABLED_REASONS, decide, retryAfterOf, retrySchedule } from '#lib/webhooks/deliver.ts';
import { DEFAULT_RETRY_SCHEDULE_SECONDS, DISABLE_AFTER_MS } from '#lib/webhooks/types.ts';

/** What an attempt's answer makes of a delivery and its endpoint (decisions.md, "Webhooks"). */
const now = Date.parse('2026-11-25T10:00:00Z');
const answer = (status: number | null, retryAfterMs: number | null = null): Answer => ({
  status,
  error: status === null ? 'timeout' : null,
  retryAfterMs,
  durationMs: 10,
});
const first = { attempts: 0, roundFirst: 1 };
const healthy = { failingSince: null };
const schedule = DEFAULT_RETRY_SCHEDULE_SECONDS;

describe('an attempt outcome', () => {
  it('2xx succeeds', () => {
    for (const status of [200, 202, 204, 299]) {
      expect(decide(answer(status), first, healthy, now, schedule)).toEqual({
        next: { state: 'succeeded' },
        endpoint: { kind: 'success' },
      });
    }
  });

  it('410 fails the delivery and disables the endpoint', () => {
    expect(decide(answer(410), first, healthy, now, schedule)).toEqual({
      next: { state: 'failed' },
      endpoint: { kind: 'disable', reason: DISABLED_REASONS.gone },
    });
  });

  it('anything else follows the schedule after the attempt, then fails after its last step', () => {
    const steps = [null, 500, 404, 301, 429, 503].map((status) => answer(status));
    for (const failed of steps) {
      expect(decide(failed, first, healthy, now, schedule)).toEqual({
        next: { state: 'pending', nextAt: now + 5_000 },
        endpoint: { kind: 'failure' },
      });
    }
    const waits = schedule.map((_, n) => {
      const next = decide(answer(500), { attempts: n, roundFirst: 1 }, healthy, now, schedule).next;
      return next.state === 'pending' ? (next.nextAt - now) / 1000 : next.state;
    });
    expect(waits).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(decide(answer(500), { attempts: 7, roundFirst: 1 }, healthy, now, schedule).next).toEqual({
      state: 'failed',
    });
  });

  it('a redelivery starts the schedule again, its attempts numbered on', () => {
    expect(decide(answer(500), { attempts: 8, roundFirst: 9 }, healthy, now, schedule).next).toEqual({
      state: 'pending',
      nextAt: now + 5_000,
    });
  });

  it('429 and 503 wait for Retry-After when it is longer than the step, never less than the step', () => {
    expect(decide(answer(429, 60_000), first, healthy, now, schedule).next).toEqual({
      state: 'pending',
      nextAt: now + 60_000,
    });
    expect(decide(answer(503, 1_000), first, healthy, now, schedule).next).toEqual({
      state: 'pending',
      nextAt: now + 5_000,
    });
    // Another status's Retry-After is not a promise to honour.
    expect(decide(answer(500, 60_000), first, healthy, now, schedule).next).toEqual({
      state: 'pending',
      nextAt: now + 5_000,
    });
  });

  it('disables an endpoint failing with no success for 5 days, not one failing for less', () => {
    const since = (ms: number) => ({ failingSince: now - ms });
    expect(decide(answer(500), first, since(DISABLE_AFTER_MS - 1), now, schedule).endpoint).toEqual({
      kind: 'failure',
    });
    expect(decide(answer(500), first, since(DISABLE_AFTER_MS), now, schedule)).toEqual({
      next: { state: 'failed' },
      endpoint: { kind: 'disable', reason: DISABLED_REASONS.failing },
    });
    // A success is a success however long the endpoint failed.
    expect(decide(answer(200), first, since(10 * DISABLE_AFTER_MS), now, schedule).endpoint).toEqual({
      kind: 'success',
    });
  });
});

describe('Retry-After', () => {
  it('reads delta seconds and HTTP dates, as ms from now', () => {
    expect(retryAfterOf('3', now)).toBe(3000);
    expect(retryAfterOf(' 120 ', now)).toBe(120_000);
    expect(retryAfterOf(new Date(now + 90_000).toUTCString(), now)).toBe(90_000);
    expect(retryAfterOf(new Date(now - 90_000).toUTCString(), now)).toBe(0);
  });

  it('ignores what it cannot read, and caps what is too far', () => {
    expect(retryAfterOf(undefined, now)).toBeNull();
    expect(retryAfterOf('', now)).toBeNull();
    expect(retryAfterOf('soon', now)).toBeNull();
    expect(retryAfterOf('99999999999', now)).toBe(7 * 24 * 60 * 60 * 1000);
  });
});

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  it('replaces the schedule, and refuses what is not seconds', () => {
    const saved = process.env.WEBHOOK_RETRY_SCHEDULE;
    try {
      delete process.env.WEBHOOK_RETRY_SCHEDULE;
      expect(retrySchedule()).toEqual(DEFAULT_RETRY_SCHEDULE_SECONDS);
      process.env.WEBHOOK_RETRY_SCHEDULE = '1, 2,4';
      expect(retrySchedule()).toEqual([1, 2, 4]);
      process.env.WEBHOOK_RETRY_SCHEDULE = '1,x';
      expect(() => retrySchedule()).toThrow(/WEBHOOK_RETRY_SCHEDULE/);
    } finally {
      if (saved === undefined) delete process.env.WEBHOOK_RETRY_SCHEDULE;
      else process.env.WEBHOOK_RETRY_SCHEDULE = saved;
    }
  });
});
