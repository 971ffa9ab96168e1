import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { PreconditionFailed, ServiceUnavailable, TooManyRequests } from '#lib/errors.ts';
import { errorResponse } from '#lib/http/context.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { tooManyRequests } from '#lib/http/rate-limit.ts';
import { lambdaContext, proxyEvent } from '#test/support/events.ts';

/**
 * The middlewares of the shared stack, on routes of their own (issue 18): the Idempotency-Key settles in
 * `after` (keeps the answer when no commit kept it) and releases its claim in `onError`; the rate count decides
 * every answer, and its 429 is the one error answer.
 */
const callerWith = (rateLimit: number) => ({
  accountId: `acc-mw-${randomUUID()}`,
  plan: 'pro' as const,
  keyId: 'key_mw',
  rateLimit,
  scopes: '*',
});

/** A write whose domain keeps no commit of its own (it never calls attach): `failures` makes it fail first. */
function countingRoute(failures: Error[] = []) {
  let runs = 0;
  const handler = httpHandler(
    {
      route: { name: 'counting', scope: 'tickets:read' },
      body: true,
      present: (n: number) => ({ statusCode: 201, body: { run: n }, headers: { ETag: `"${n}"` } }),
    },
    async () => {
      const failure = failures.shift();
      if (failure) throw failure;
      return ++runs;
    },
  );
  return { handler, runs: () => runs };
}

const post = (
  handler: ReturnType<typeof countingRoute>['handler'],
  caller: ReturnType<typeof callerWith>,
  key?: string,
) =>
  handler(
    proxyEvent({
      method: 'POST',
      path: '/api/counting',
      caller,
      body: { any: 'thing' },
      headers: key ? { 'Idempotency-Key': key } : {},
    }),
    lambdaContext,
  );

describe('the Idempotency-Key middleware', () => {
  it('keeps the answer of a route whose commit did not (after): the retry replays it, the route runs once', async () => {
    const route = countingRoute();
    const caller = callerWith(1_000);
    const first = await post(route.handler, caller, 'k1');
    const again = await post(route.handler, caller, 'k1');
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.body).toBe(first.body);
    expect(again.headers?.ETag).toBe('"1"');
    expect(again.headers?.['Idempotent-Replayed']).toBe('true');
    expect(route.runs()).toBe(1);
  });

  it.each([
    ['an error answer (503)', new ServiceUnavailable()],
    ['an unexpected error (500)', new Error('boom')],
  ])(
    'releases its claim when the route fails with %s (onError): the same key then runs',
    async (_l, error) => {
      const route = countingRoute([error]);
      const caller = callerWith(1_000);
      const failed = await post(route.handler, caller, 'k2');
      expect(failed.statusCode).toBe(error instanceof ServiceUnavailable ? 503 : 500);
      const retried = await post(route.handler, caller, 'k2');
      expect(retried.statusCode).toBe(201);
      expect(retried.headers?.['Idempotent-Replayed']).toBeUndefined();
      expect(JSON.parse(retried.body)).toEqual({ run: 1 });
    },
  );
});

describe('the rate count middleware', () => {
  it('answers 429 over the limit through the one error answer, with the window headers', async () => {
    const route = countingRoute();
    const caller = callerWith(1);
    const passed = await post(route.handler, caller);
    expect(passed.statusCode).toBe(201);
    expect(passed.headers?.['X-RateLimit-Remaining']).toBe('0');
    const refused = await post(route.handler, caller);
    expect(refused.statusCode).toBe(429);
    const requestId = refused.headers?.['X-Request-Id'] as string;
    const retryAfter = Number(refused.headers?.['Retry-After']);
    const resetAt = Number(refused.headers?.['X-RateLimit-Reset']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // Exactly the error answer of a TooManyRequests for this window, rate headers included.
    const expected = errorResponse(
      tooManyRequests({ allowed: false, limit: 1, count: 1, resetAt, configVersion: 0, rulesVersion: 0 }),
      requestId,
    );
    expect(refused.body).toBe(expected.body);
    expect(refused.body).toBe(JSON.stringify({ message: 'Too Many Attempts.' }));
    expect({ ...refused.headers, 'Retry-After': 'x', RateLimit: 'x' }).toEqual({
      ...expected.headers,
      'Retry-After': 'x',
      RateLimit: 'x',
    });
    expect(refused.headers?.RateLimit).toMatch(/^"minute";r=0;t=\d+$/);
  });

  it('decides a failed request too: its error answer carries the window headers, or becomes the 429', async () => {
    const caller = callerWith(1);
    const failing = countingRoute([new PreconditionFailed(), new PreconditionFailed()]);
    const first = await post(failing.handler, caller);
    expect(first.statusCode).toBe(412);
    expect(first.headers?.['X-RateLimit-Limit']).toBe('1');
    const second = await post(failing.handler, caller);
    expect(second.statusCode).toBe(429);
    expect(JSON.parse(second.body)).toEqual({ message: 'Too Many Attempts.' });
  });
});

describe('HTTP errors', () => {
  it('carry their status in lib/errors.ts, 412 and 429 included', () => {
    expect(new PreconditionFailed().statusCode).toBe(412);
    const error = new TooManyRequests(7, { 'X-RateLimit-Limit': '5' });
    expect(error.statusCode).toBe(429);
    expect(error.headers()).toEqual({ 'X-RateLimit-Limit': '5', 'Retry-After': '7' });
  });
});
