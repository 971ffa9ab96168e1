import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { Caller } from '#lib/accounts/api-keys.ts';
import { type RateScope, withRateScope } from '#lib/data/rate-limit.ts';
import { BadRequest, PayloadTooLarge, UnsupportedMediaType } from '#lib/errors.ts';
import {
  type AnswerHook,
  type Event,
  httpContext,
  type Internal,
  REPLAYED_HEADER,
  type Result,
} from './context.ts';
import { IDEMPOTENCY_HEADER, parseIdempotencyKey, startIdempotent } from './idempotency.ts';
import type { BusinessMetric } from './metrics.ts';
import { closeRateScope, openRateScope } from './rate-limit.ts';
import {
  baseUrlOf,
  callerOf,
  type HttpRequest,
  type HttpResult,
  headerOf,
  headerValues,
  paramsOf,
  queryOf,
  requestIdOf,
} from './request.ts';
import { jsonResponse, jsonTextResponse } from './response.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

/** The rate scope of each request past authentication, keyed by its event (see lib/http/rate-limit.ts). */
const rateScopes = new WeakMap<Event, RateScope>();

/** Bodies parsed by jsonBody(), keyed by their event: the raw event stays as API Gateway sent it. */
const parsedBodies = new WeakMap<Event, Record<string, unknown>>();

/**
 * The rate count around every answer past authentication: opened when the request starts (beside its first
 * round trip, or folded into its first write), and every answer goes through the rate decision (headers, or 429).
 */
function rateHook(foldsRate: boolean): AnswerHook {
  return {
    open: (event, accountId) => {
      const limit = Number(event.requestContext?.authorizer?.rateLimit);
      if (accountId && Number.isInteger(limit) && limit > 0) {
        rateScopes.set(event, openRateScope(event, accountId, limit, foldsRate));
      }
    },
    close: async (event, accountId, response, requestId) => {
      const rate = rateScopes.get(event);
      if (!rate || !accountId) return response;
      return closeRateScope(rate, accountId, response, requestId);
    },
  };
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
    httpContext({ ...options, hook: rateHook(options.foldsRate === true) }),
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
      ...start.replay.headers,
      [REPLAYED_HEADER]: 'true',
    });
  }
  const call = start?.call;
  const request: HttpRequest = {
    method: event.httpMethod,
    path: event.path,
    params: paramsOf(event),
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

/** Methods that change something: the ones an Idempotency-Key applies to. */
const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const keptAnswerOf = (result: HttpResult) => ({
  statusCode: result.statusCode,
  body: JSON.stringify(result.body),
  ...(result.headers ? { headers: result.headers } : {}),
});
