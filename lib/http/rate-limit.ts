import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { consumeRate, type RateOutcome, type RateScope } from '#lib/data/rate-limit.ts';
import { AppError } from '#lib/errors.ts';
import { nowMicros } from '#lib/time.ts';
import { IDEMPOTENCY_HEADER } from './idempotency.ts';
import { headerValues } from './request.ts';
import { jsonResponse } from './response.ts';

/**
 * Rate limits per plan over HTTP (decisions.md, "Rate limits per plan"): every answer past authentication
 * carries the window's headers; over the limit, 429 and the request changes nothing. How the count is kept:
 * lib/data/rate-limit.ts; cost and failure behaviour: docs/data-model.md, "Rate limits".
 */
export class TooManyRequests extends AppError {
  readonly statusCode = 429;
  constructor(private readonly outcome: RateOutcome) {
    super('Too Many Attempts.');
  }
  override headers() {
    const retryAfter = Math.max(1, this.outcome.resetAt - Math.floor(nowMicros() / 1_000_000));
    return {
      ...rateHeaders(this.outcome),
      'Retry-After': String(retryAfter),
      'X-RateLimit-Reset': String(this.outcome.resetAt),
    };
  }
}

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

/**
 * Opens the request's rate scope. The count runs at once, beside the request's first round trip, unless the
 * route folds it into its first write (a create without Idempotency-Key: its ticket number's UpdateItem).
 */
export function openRateScope(
  event: APIGatewayProxyEvent,
  accountId: string,
  limit: number,
  foldable: boolean,
): RateScope {
  const window = { limit, nowMs: Math.floor(nowMicros() / 1000) };
  const folds = foldable && headerValues(event, IDEMPOTENCY_HEADER).length === 0;
  if (folds) return { window };
  const eager = consumeRate(accountId, window);
  eager.catch(() => {}); // awaited by closeRateScope; a failure must not be unhandled meanwhile
  return { window, eager };
}

/**
 * The request's outcome with its rate: the response with the window's headers, or 429 when the request was over
 * the limit (whatever it would have answered: it changed nothing). A count that could not be written is a 503.
 */
export async function closeRateScope(
  rate: RateScope,
  accountId: string,
  response: APIGatewayProxyResult,
  requestId: string,
): Promise<APIGatewayProxyResult> {
  const outcome = rate.folded ?? (await (rate.eager ?? consumeRate(accountId, rate.window)));
  if (!outcome.allowed) {
    const error = new TooManyRequests(outcome);
    return jsonResponse(error.statusCode, error.body(), requestId, error.headers());
  }
  return { ...response, headers: { ...response.headers, ...rateHeaders(outcome) } };
}
