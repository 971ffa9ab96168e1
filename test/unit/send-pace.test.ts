import { afterEach, describe, expect, it } from 'vitest';
import { emailSendRate, MAX_THROTTLE_HOLD_MS, SendPace } from '#lib/email/outbox/pace.ts';
import { nowMillis, setClock } from '#lib/time.ts';
import { TokenBucket } from '#lib/token-bucket.ts';
import { ManualClock } from '#test/support/clock.ts';

/**
 * The outbox's pace (lib/email/outbox/pace.ts, lib/token-bucket.ts) on the manual clock: sends at the sending
 * quota's rate, a throttle holding every send, doubling while throttles go on (issue 40).
 */
afterEach(() => setClock());

/** Takes started at once; each one's time (the clock's) once taken, or false when it gave up. */
function takeAll(take: () => Promise<boolean>, n: number): (number | false)[] {
  const times: (number | false)[] = [];
  for (let i = 0; i < n; i++) void take().then((ok) => times.push(ok ? nowMillis() : false));
  return times;
}

describe('the token bucket', () => {
  it('lets a burst go at once, then one take every 1/rate seconds', async () => {
    const manual = new ManualClock(0);
    setClock(manual);
    const bucket = new TokenBucket(4);
    const times = takeAll(() => bucket.take(), 10);
    await manual.advance(2_000);
    expect(times).toEqual([0, 0, 0, 0, 250, 500, 750, 1000, 1250, 1500]);
  });

  it('answers false at once when no token would come before the run ends', async () => {
    const manual = new ManualClock(0);
    setClock(manual);
    const bucket = new TokenBucket(1, 1);
    expect(await bucket.take(500)).toBe(true);
    expect(await bucket.take(500)).toBe(false);
    expect(manual.waiting).toBe(0);
  });
});

describe('the send pace', () => {
  it('a throttle holds every send for 1 s, then 2, 4 … 60 while throttles go on, and none after a mail is taken', async () => {
    const manual = new ManualClock(0);
    setClock(manual);
    const pace = new SendPace();
    expect(pace.throttled()).toBe(1_000);
    // Sends in flight when the first came back throttled: one hold, not one each.
    expect(pace.throttled()).toBe(1_000);
    const times = takeAll(() => pace.take(), 2);
    await manual.advance(1_000);
    expect(times).toEqual([1_000, 1_000]);
    expect(pace.throttled()).toBe(3_000);
    await manual.advanceTo(3_000);
    let hold = 2_000;
    for (let i = 0; i < 8; i++) {
      hold = Math.min(MAX_THROTTLE_HOLD_MS, hold * 2);
      expect(pace.throttled()).toBe(nowMillis() + hold);
      await manual.advance(hold);
    }
    expect(hold).toBe(MAX_THROTTLE_HOLD_MS);
    pace.accepted();
    expect(pace.throttled()).toBe(nowMillis() + 1_000);
  });

  it('paced to the rate, and a hold past the run end gives up at once', async () => {
    const manual = new ManualClock(0);
    setClock(manual);
    const pace = new SendPace(2);
    const times = takeAll(() => pace.take(), 4);
    await manual.advance(1_000);
    expect(times).toEqual([0, 0, 500, 1000]);
    pace.throttled();
    expect(await pace.take(nowMillis() + 500)).toBe(false);
  });

  it('EMAIL_SEND_RATE: mails a second, unset for unpaced', () => {
    const before = process.env.EMAIL_SEND_RATE;
    try {
      delete process.env.EMAIL_SEND_RATE;
      expect(emailSendRate()).toBeUndefined();
      process.env.EMAIL_SEND_RATE = '14';
      expect(emailSendRate()).toBe(14);
      process.env.EMAIL_SEND_RATE = '0';
      expect(() => emailSendRate()).toThrow(/EMAIL_SEND_RATE/);
    } finally {
      if (before === undefined) delete process.env.EMAIL_SEND_RATE;
      else process.env.EMAIL_SEND_RATE = before;
    }
  });
});
