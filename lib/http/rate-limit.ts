import type { MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import { consumeRate, type RateOutcome, type RateScope, requestRate } from '#lib/data/requests/rate-limit.ts';
import { TooManyRequests } from '#lib/errors.ts';
import { requestScope } from '#lib/request-scope.ts';
import { nowMicros } from '#lib/time.ts';
import { accountIdOf, type Event, errorResponse, type Internal, type Result } from './context.ts';

/**
 * Rate limits per plan over HTTP (decisions.md, "Rate limits per plan"): every answer past authentication
 * carries the window's headers; over the limit, 429 and the request changes nothing. How the count is kept:
 * lib/data/requests/rate-limit.ts; cost and failure behaviour: docs/data-model.md, "Rate limits".
 */
export function rateHeaders(outcome: RateOutcome): Record<string, string> {
  const remaining = Math.max(0, outcome.limit - outcome.count);
  const reset = Math.max(0, outcome.resetAt - Math.floor(nowMicros() / 1_000_000));
  return {
    'X-RateLimit-Limit': String(outcome.limit),
    'X-RateLimit-Remaining': String(remaining),
    'RateLimit-Policy': `"minute";q=${outcome.limit};w=60`,
    RateLimit: `"minute";r=${remaining};t=${reset}`,
  };
}

/** The 429 of a refused count: the window's headers, when it ends, and Retry-After until then (at least 1 s). */
export function tooManyRequests(outcome: RateOutcome): TooManyRequests {
  const retryAfter = Math.max(1, outcome.resetAt - Math.floor(nowMicros() / 1_000_000));
  return new TooManyRequests(retryAfter, {
    ...rateHeaders(outcome),
    'X-RateLimit-Reset': String(outcome.resetAt),
  });
}

/** Opens the request's rate scope: the count runs at once, beside the request's first round trip. */
export function openRateScope(accountId: string, limit: number): RateScope {
  const window = { limit, nowMs: Math.floor(nowMicros() / 1000) };
  const eager = consumeRate(accountId, window);
  eager.catch(() => {}); // awaited when the request is decided; a failure must not be unhandled meanwhile
  return { window, eager };
}

/**
 * The rate count of every request past authentication, as a middleware: opened in `before` (into the request
 * scope, where the data layer's writes wait for it), decided in `after`/`onError`: the
 * answer with the window's headers, or 429 when the request was over the limit (whatever it would have
 * answered: it changed nothing). A count that could not be written is a 503. Every one of these answers is
 * the one errorResponse.
 */
export function rateCount(): MiddlewareObj<Event, Result, Error, Context, Internal> {
  const decide = async (
    event: Event,
    requestId: string,
    answer: () => Result,
  ): Promise<Result | undefined> => {
    const rate = requestRate();
    const accountId = accountIdOf(event);
    if (!rate || !accountId) return undefined;
    let outcome: RateOutcome;
    try {
      outcome = await rate.eager;
    } catch (error) {
      return errorResponse(error, requestId);
    }
    if (!outcome.allowed) return errorResponse(tooManyRequests(outcome), requestId);
    const response = answer();
    return { ...response, headers: { ...response.headers, ...rateHeaders(outcome) } };
  };
  return {
    before: (request) => {
      const scope = requestScope();
      const accountId = accountIdOf(request.event);
      const limit = Number(request.event.requestContext?.authorizer?.rateLimit);
      if (scope && accountId && Number.isInteger(limit) && limit > 0) {
        scope.rate = openRateScope(accountId, limit);
      }
    },
    after: async (request) => {
      const { response } = request;
      if (!response) return;
      request.response =
        (await decide(request.event, request.internal.requestId, () => response)) ?? response;
    },
    onError: async (request) => {
      const { requestId } = request.internal;
      const decided = await decide(request.event, requestId, () => errorResponse(request.error, requestId));
      if (decided) request.response = decided;
    },
  };
}
