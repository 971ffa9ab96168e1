import middy, { type MiddlewareObj } from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type { Caller } from '#lib/accounts/api-keys.ts';
import { type RateScope, withRateScope } from '#lib/data/rate-limit.ts';
import { AppError, BadRequest, PayloadTooLarge, UnsupportedMediaType } from '#lib/errors.ts';
import { IDEMPOTENCY_HEADER, parseIdempotencyKey, startIdempotent } from './idempotency.ts';
import { logError, logRequest, startInvocationLog } from './log.ts';
import { type BusinessMetric, type MetricName, publishCounts } from './metrics.ts';
import { closeRateScope, openRateScope } from './rate-limit.ts';
import {
  baseUrlOf,
  callerOf,
  type HttpRequest,
  type HttpResult,
  headerOf,
  headerValues,
  queryOf,
  requestIdOf,
} from './request.ts';
import { jsonResponse, jsonTextResponse, serverErrorBody } from './response.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

type Event = APIGatewayProxyEvent;
type Result = APIGatewayProxyResult;

interface Internal extends Record<string, unknown> {
  startedAt: number;
  requestId: string;
}

/** The rate scope of each request past authentication, keyed by its event (see lib/http/rate-limit.ts). */
const rateScopes = new WeakMap<Event, RateScope>();

/** Bodies parsed by jsonBody(), keyed by their event: the raw event stays as API Gateway sent it. */
const parsedBodies = new WeakMap<Event, Record<string, unknown>>();

function accountIdOf(event: Event): string | undefined {
  const accountId = event.requestContext?.authorizer?.accountId;
  return typeof accountId === 'string' ? accountId : undefined;
}

/**
 * Outermost middleware: request id, timing, the log line and the counts, and errors → responses. AppErrors
 * become their status and body; anything else a 500 with only the request id (the cause goes to the log,
 * not the client).
 */
function httpContext(options: RouteOptions): MiddlewareObj<Event, Result, Error, Context, Internal> {
  const { metric } = options;
  const route = options.route.name;
  const finish = (request: { event: Event; internal: Internal }, response: Result) => {
    logRequest({
      method: request.event.httpMethod,
      status: response.statusCode,
      durationMs: Math.round((performance.now() - request.internal.startedAt) * 100) / 100,
    });
    publishCounts(route, countsOf(response, metric));
  };
  /** Every answer past authentication goes through the rate decision (headers, or 429). */
  const rated = async (request: { event: Event; internal: Internal }, response: Result): Promise<Result> => {
    const rate = rateScopes.get(request.event);
    const accountId = accountIdOf(request.event);
    if (!rate || !accountId) return response;
    try {
      return await closeRateScope(rate, accountId, response, request.internal.requestId);
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
      const limit = Number(request.event.requestContext?.authorizer?.rateLimit);
      if (accountId && Number.isInteger(limit) && limit > 0) {
        rateScopes.set(
          request.event,
          openRateScope(request.event, accountId, limit, options.foldsRate === true),
        );
      }
    },
    after: async (request) => {
      if (!request.response) return;
      request.response = await rated(request, request.response);
      finish(request, request.response);
    },
    onError: async (request) => {
      const requestId = request.internal.requestId ?? requestIdOf(request.event);
      request.response = await rated(request, errorResponse(request.error, requestId));
      finish(request, request.response);
    },
  };
}

/** AppErrors become their status, headers and body; anything else a 500 with only the request id. */
function errorResponse(error: unknown, requestId: string): Result {
  if (error instanceof AppError)
    return jsonResponse(error.statusCode, error.body(), requestId, error.headers());
  logError(error);
  return jsonResponse(500, serverErrorBody(requestId), requestId);
}

/** A request's counts: a 4xx or 5xx by its class; a success by the route's metric, unless it was a replay. */
function countsOf(response: Result, metric: BusinessMetric | undefined): MetricName[] {
  if (response.statusCode >= 500) return ['Responses5xx'];
  if (response.statusCode >= 400) return ['Responses4xx'];
  const replayed = response.headers?.[REPLAYED_HEADER] === 'true';
  return metric && !replayed ? [metric] : [];
}

/** JSON body: 413 over 1 MiB, 415 without a JSON content type, 400 when it is not a JSON object. */
function jsonBody(): MiddlewareObj<Event, Result, Error, Context, Internal> {
  return {
    before: (request) => {
      const { event } = request;
      const raw = event.body ?? '';
      const bytes = event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
      if (bytes.byteLength > MAX_BODY_BYTES) {
        throw new PayloadTooLarge('The request body must not exceed 1 MiB.');
      }
      const contentType = headerOf(event, 'content-type') ?? '';
      if (!/^application\/([\w.+-]+\+)?json\s*(;|$)/i.test(contentType.trim())) {
        throw new UnsupportedMediaType('The request body must be sent with Content-Type: application/json.');
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(bytes.toString('utf8'));
      } catch {
        throw new BadRequest('The request body is not valid JSON.');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new BadRequest('The request body must be a JSON object.');
      }
      parsedBodies.set(event, parsed as Record<string, unknown>);
    },
  };
}

export interface RouteOptions {
  /** The route served, from the route table (`route()` of functions/routes.ts): its name is logged. */
  route: { readonly name: string };
  /** Whether the request carries a JSON body to parse. */
  body?: boolean;
  /** Counted once per successful request (not for an idempotent replay), e.g. TicketCreated. */
  metric?: BusinessMetric;
  /** The route's first write can carry the rate count (a create's ticket number): no separate count. */
  foldsRate?: boolean;
}

export type RouteHandler = (request: HttpRequest, caller: Caller) => Promise<HttpResult>;

/**
 * The one middy stack every HTTP handler uses: thin handlers get a parsed request and the caller, and
 * return a status and a body; everything else (ids, parsing, errors, logs) happens here.
 */
export function httpHandler(options: RouteOptions, handle: RouteHandler) {
  const stack = middy<Event, Result, Error, Context, Internal>({ timeoutEarlyInMillis: 0 }).use(
    httpContext(options),
  );
  if (options.body) stack.use(jsonBody());
  return stack.handler((event) => {
    const rate = rateScopes.get(event);
    const serve = () => serveRequest(event, handle);
    return rate ? withRateScope(rate, serve) : serve();
  });
}

/** Idempotency, the request the handler sees, and its answer. */
async function serveRequest(event: Event, handle: RouteHandler): Promise<Result> {
  const requestId = requestIdOf(event);
  const caller = callerOf(event);
  const body = parsedBodies.get(event);
  const keyValues = WRITE_METHODS.has(event.httpMethod) ? headerValues(event, IDEMPOTENCY_HEADER) : [];
  const start =
    keyValues.length > 0
      ? await startIdempotent({
          accountId: caller.accountId,
          key: parseIdempotencyKey(keyValues),
          method: event.httpMethod,
          path: event.path,
          body,
        })
      : undefined;
  if (start && 'replay' in start) {
    return jsonTextResponse(start.replay.statusCode, start.replay.body, requestId, {
      [REPLAYED_HEADER]: 'true',
    });
  }
  const call = start?.call;
  const request: HttpRequest = {
    method: event.httpMethod,
    path: event.path,
    params: Object.fromEntries(
      Object.entries(event.pathParameters ?? {}).filter((e): e is [string, string] => e[1] !== undefined),
    ),
    header: (name) => headerOf(event, name),
    query: queryOf(event),
    body,
    requestId,
    baseUrl: baseUrlOf(event),
    receipt: (answer) => call?.receipt((result) => keptAnswerOf(answer(result))),
  };
  let result: HttpResult;
  try {
    result = await handle(request, caller);
    await call?.succeeded(keptAnswerOf(result));
  } catch (error) {
    await call?.failed();
    throw error;
  }
  return jsonResponse(result.statusCode, result.body, requestId, result.headers);
}

const REPLAYED_HEADER = 'Idempotent-Replayed';

/** Methods that change something: the ones an Idempotency-Key applies to. */
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const keptAnswerOf = (result: HttpResult) => ({
  statusCode: result.statusCode,
  body: JSON.stringify(result.body),
});
