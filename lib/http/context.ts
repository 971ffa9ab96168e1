import type { MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { AppError } from '#lib/errors.ts';
import { logError, logRequest, startInvocationLog } from './log.ts';
import { type BusinessMetric, type MetricName, publishCounts } from './metrics.ts';
import { requestIdOf } from './request.ts';
import { jsonResponse, serverErrorBody } from './response.ts';

/**
 * The outermost middleware of every handler, public or behind the authorizer: request id, timing, the log
 * line and the counts, and errors → responses. It knows nothing of the store, so a public route's bundle
 * (the OpenAPI document, the docs page) carries no DynamoDB client.
 */
export type Event = APIGatewayProxyEvent;
export type Result = APIGatewayProxyResult;

export interface Internal extends Record<string, unknown> {
  startedAt: number;
  requestId: string;
}

/** What the authenticated stack adds around every answer (the rate count: lib/http/handler.ts). */
export interface AnswerHook {
  /** When the request starts, with the account the authorizer resolved (undefined on public routes). */
  open(event: Event, accountId: string | undefined): void;
  /** Every answer passes through here before it is logged and sent. */
  close(event: Event, accountId: string | undefined, response: Result, requestId: string): Promise<Result>;
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
  hook?: AnswerHook;
}

export function httpContext(options: ContextOptions): MiddlewareObj<Event, Result, Error, Context, Internal> {
  const { metric, hook } = options;
  const route = options.route.name;
  const finish = (request: { event: Event; internal: Internal }, response: Result) => {
    logRequest({
      method: request.event.httpMethod,
      status: response.statusCode,
      durationMs: Math.round((performance.now() - request.internal.startedAt) * 100) / 100,
    });
    publishCounts(route, countsOf(response, metric));
  };
  const closed = async (request: { event: Event; internal: Internal }, response: Result): Promise<Result> => {
    if (!hook) return response;
    try {
      return await hook.close(
        request.event,
        accountIdOf(request.event),
        response,
        request.internal.requestId,
      );
    } catch (error) {
      return errorResponse(error, request.internal.requestId);
    }
  };
  return {
    before: (request) => {
      request.internal.startedAt = performance.now();
      request.internal.requestId = requestIdOf(request.event);
      const accountId = accountIdOf(request.event);
      startInvocationLog({ requestId: request.internal.requestId, accountId, route }, request.context);
      hook?.open(request.event, accountId);
    },
    after: async (request) => {
      if (!request.response) return;
      request.response = await closed(request, request.response);
      finish(request, request.response);
    },
    onError: async (request) => {
      const requestId = request.internal.requestId ?? requestIdOf(request.event);
      request.response = await closed(request, errorResponse(request.error, requestId));
      finish(request, request.response);
    },
  };
}

/** AppErrors become their status, headers and body; anything else a 500 with only the request id. */
export function errorResponse(error: unknown, requestId: string): Result {
  if (error instanceof AppError)
    return jsonResponse(error.statusCode, error.body(), requestId, error.headers());
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
