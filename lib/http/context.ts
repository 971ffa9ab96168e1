import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { DEADLINE_MARGIN_MS, FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';
import { isTransactionConflict } from '#lib/data/store/errors.ts';
import { AppError, ServiceUnavailable } from '#lib/errors.ts';
import { invocationLogKeys, logError, logRequest } from '#lib/log.ts';
import { runInRequestScope } from '#lib/request-scope.ts';
import { nowMicros, nowMillis } from '#lib/time.ts';
import type { IdempotentCall } from './idempotency.ts';
import { type BusinessMetric, type MetricName, publishCounts } from './metrics.ts';
import { type HttpResult, requestIdOf } from './request.ts';
import { jsonResponse, serverErrorBody } from './response.ts';

export type Event = APIGatewayProxyEvent;
export type Result = APIGatewayProxyResult;

/**
 * The request's state, shared by the middlewares of its stack (middy's `request.internal`). The handler reaches
 * it through its context (internalOf): middy hands a handler only the event and the context.
 */
export interface Internal extends Record<string, unknown> {
  /** When the request came in (epoch microseconds): its duration is logged. */
  startedAt: number;
  requestId: string;
  /** The JSON body, parsed by jsonBody() (the event keeps the body as API Gateway sent it). */
  body?: Record<string, unknown>;
  /** The Idempotency-Key claimed for this request (lib/http/idempotency.ts). */
  idempotency?: IdempotentCall;
  /** The kept answer of an earlier request with this Idempotency-Key: the answer, without calling the route. */
  replay?: Result;
  /** The route's answer as rendered, before the stack's own headers: what an Idempotency-Key keeps. */
  answer?: HttpResult;
}

/** Lambda's context as the handler of a stack sees it: the request's internal state beside Lambda's own. */
type StackContext = Context & { readonly internal?: Internal };

/** The request's internal state, from the context the stack handed its handler. */
export function internalOf(context: Context): Internal {
  const internal = (context as StackContext).internal;
  if (!internal) throw new Error('internalOf: not called from a handler of the HTTP stack');
  return internal;
}

export function accountIdOf(event: Event): string | undefined {
  const accountId = event.requestContext?.authorizer?.accountId;
  return typeof accountId === 'string' ? accountId : undefined;
}

export interface ContextOptions {
  /** The route served, from the route table: its name is logged. */
  route: { readonly name: string };
  /** Counted once per successful request (not for an idempotent replay), e.g. TicketCreated. */
  metric?: BusinessMetric;
}

/**
 * The deadline of a request: the time its function has left, less a margin (DEADLINE_MARGIN_MS), so that a
 * stalled store is a 503 before the function times out. A context without a clock (a test's) gets the function
 * timeout, as a fresh invocation would.
 */
function deadlineOf(context: Context | undefined): number {
  const remaining =
    typeof context?.getRemainingTimeInMillis === 'function'
      ? context.getRemainingTimeInMillis()
      : FUNCTION_TIMEOUT_MS;
  return nowMillis() + remaining - DEADLINE_MARGIN_MS;
}

/**
 * Runs each invocation of a stack, public or behind the authorizer, inside its request scope (lib/request-scope.ts):
 * its deadline, and the keys on each of its log lines (request id, account, route, Lambda's fields). Entered
 * around the whole stack, so that every middleware's store calls and lines have it too.
 */
export function inRequestScope(
  route: { readonly name: string },
  stack: (event: Event, context: Context) => Promise<Result>,
) {
  return (event: Event, context: Context): Promise<Result> => {
    const keys = { requestId: requestIdOf(event), accountId: accountIdOf(event), route: route.name };
    const scope = { deadline: deadlineOf(context), log: invocationLogKeys(keys, context) };
    return runInRequestScope(scope, () => stack(event, context));
  };
}

/**
 * The outermost middleware of every handler, public or behind the authorizer: ids, timing, the log line and the
 * counts of every answer, and errors that no inner middleware answered → errorResponse. It knows nothing of the
 * store, so a public route's bundle (the OpenAPI document, the docs page) carries no DynamoDB client.
 */
export function httpContext(options: ContextOptions): MiddlewareObj<Event, Result, Error, Context, Internal> {
  const { metric } = options;
  const route = options.route.name;
  const finish = (request: { event: Event; internal: Internal }, response: Result) => {
    logRequest({
      method: request.event.httpMethod,
      status: response.statusCode,
      durationMs: Math.round((nowMicros() - request.internal.startedAt) / 10) / 100,
    });
    publishCounts(route, countsOf(response, metric));
  };
  return {
    before: (request) => {
      request.internal.startedAt = nowMicros();
      request.internal.requestId = requestIdOf(request.event);
      // This request's view of Lambda's context (every field and method of it, and the request's state): the
      // context object itself may serve several requests at once (the local gateway, tests).
      request.context = Object.assign(Object.create(request.context) as Context, {
        internal: request.internal,
      });
    },
    after: (request) => {
      if (request.response) finish(request, request.response);
    },
    onError: (request) => {
      request.response ??= errorResponse(
        request.error,
        request.internal.requestId ?? requestIdOf(request.event),
      );
      finish(request, request.response);
    },
  };
}

/**
 * The one error answer: AppErrors become their status, headers and body; anything else a 500 with only the
 * request id (and the error in the log).
 */
export function errorResponse(error: unknown, requestId: string): Result {
  if (error instanceof AppError)
    return jsonResponse(error.statusCode, error.body(), requestId, error.headers());
  // A transaction conflict no layer decided again (on a read, the rate count, a place of the feed): the store
  // was busy with the same item, and the request may be retried (with its Idempotency-Key), never a 500.
  if (isTransactionConflict(error))
    return errorResponse(new ServiceUnavailable(1, { cause: error }), requestId);
  logError(error);
  return jsonResponse(500, serverErrorBody(requestId), requestId);
}

export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** A request's counts: a 4xx or 5xx by its class; a success by the route's metric, unless it was a replay. */
function countsOf(response: Result, metric: BusinessMetric | undefined): MetricName[] {
  if (response.statusCode >= 500) return ['Responses5xx'];
  if (response.statusCode >= 400) return ['Responses4xx'];
  const replayed = response.headers?.[REPLAYED_HEADER] === 'true';
  return metric && !replayed ? [metric] : [];
}
