import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { getItem } from '#lib/data/store/client.ts';
import { MAX_CONFLICT_ATTEMPTS, retryOnConflict } from '#lib/data/store/errors.ts';
import { ServiceUnavailable } from '#lib/errors.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { runInRequestScope } from '#lib/request-scope.ts';
import { nowMillis } from '#lib/time.ts';
import { useManualClock } from '#test/support/clock.ts';
import { lambdaContext, proxyEvent } from '#test/support/events.ts';

/**
 * One deadline per request (issue 18): every store call of a request, and what runs after a failure, ends by
 * it; the deadline is the function's remaining time less 1.5 s (docs/decisions.md, "Failures and retries"). The
 * service's clock is the test's: work that "takes" some time moves it on.
 */
const clock = useManualClock();
const conflict = () => Object.assign(new Error('conflict'), { name: 'TransactionConflictException' });

describe('the request deadline', () => {
  it('refuses a store call once the deadline has passed (503), without reaching the store', async () => {
    const work = runInRequestScope({ deadline: nowMillis() - 1 }, () => getItem({ pk: 'none', sk: 'none' }));
    await expect(work).rejects.toBeInstanceOf(ServiceUnavailable);
  });

  it('stops retrying a conflict when the deadline comes', async () => {
    let attempts = 0;
    const started = nowMillis();
    const work = runInRequestScope({ deadline: nowMillis() + 150 }, () =>
      retryOnConflict(async () => {
        attempts++;
        // Each attempt takes 40 ms.
        await clock().advance(40);
        throw conflict();
      }),
    );
    await expect(work).rejects.toBeInstanceOf(ServiceUnavailable);
    expect(nowMillis() - started).toBeLessThan(1_000);
    expect(attempts).toBeLessThan(MAX_CONFLICT_ATTEMPTS);
  });

  it("is the function's remaining time less 1.5 s: with 1.6 s left, a store call 0.3 s in is a 503", async () => {
    const route = httpHandler({ route: { name: 'slow', scope: 'tickets:read' } }, async () => {
      await clock().advance(300);
      await getItem({ pk: 'none', sk: 'none' });
      return { statusCode: 200, body: {} };
    });
    const caller = {
      accountId: `acc-${randomUUID()}`,
      plan: 'pro' as const,
      keyId: 'key_d',
      rateLimit: 1_000,
      scopes: '*',
    };
    const ends = nowMillis() + 1_600;
    const context = { ...lambdaContext, getRemainingTimeInMillis: () => ends - nowMillis() } as Context;
    const started = nowMillis();
    const response = await route(proxyEvent({ path: '/api/slow', caller }), context);
    expect(response.statusCode).toBe(503);
    expect(response.headers?.['Retry-After']).toBe('1');
    expect(nowMillis() - started).toBeLessThan(1_500);
  });
});
