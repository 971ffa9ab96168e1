import middy, { type MiddlewareObj } from '@middy/core';
import type { Context } from 'aws-lambda';
import type { Caller } from '#lib/accounts/api-keys.ts';
import { BadRequest, PayloadTooLarge } from '#lib/errors.ts';
import {
  type Event,
  httpContext,
  type Internal,
  inRequestScope,
  internalOf,
  type Result,
} from './context.ts';
import { commitHook, idempotency } from './idempotency.ts';
import { checkJsonContentType, checkJsonDepth } from './json-limits.ts';
import type { BusinessMetric } from './metrics.ts';
import { type PathObjectFinder, pathObjectFirst } from './path-object.ts';
import { rateCount } from './rate-limit.ts';
import {
  baseUrlOf,
  callerOf,
  type HttpRequest,
  type HttpResult,
  headerOf,
  paramsOf,
  queryOf,
  resourcePathOf,
} from './request.ts';
import { binaryResponse, jsonResponse } from './response.ts';
import { requireScope } from './scope.ts';
import { KEY_ROUTES_SCOPE, storedKey } from './stored-key.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * JSON body: 413 over 1 MiB, 415 without a JSON content type or with a charset other than UTF-8, 400 when it
 * nests deeper than MAX_JSON_DEPTH or is not a JSON object (json-limits.ts).
 */
function jsonBody(): MiddlewareObj<Event, Result, Error, Context, Internal> {
  return {
    before: (request) => {
      const { event } = request;
      const raw = event.body ?? '';
      const bytes = event.isBase64Encoded ? Buffer.from(raw, 'base64') : Buffer.from(raw, 'utf8');
      if (bytes.byteLength > MAX_BODY_BYTES) {
        throw new PayloadTooLarge('The request body must not exceed 1 MiB.');
      }
      checkJsonContentType(headerOf(event, 'content-type') ?? '');
      const text = bytes.toString('utf8');
      checkJsonDepth(text);
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new BadRequest('The request body is not valid JSON.');
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
        throw new BadRequest('The request body must be a JSON object.');
      }
      request.internal.body = parsed as Record<string, unknown>;
    },
  };
}

export interface RouteOptions {
  /** The route served, from the route table (`route()` of functions/routes.ts): its name is logged. */
  route: {
    readonly name: string;
    readonly path?: string;
    readonly scope?: string;
    readonly scopeByType?: 'query' | 'object';
  };
  /** Whether the request carries a JSON body to parse. */
  body?: boolean;
  /** Counted once per successful request (not for an idempotent replay), e.g. TicketCreated. */
  metric?: BusinessMetric;
  /**
   * A route whose path names an object, and that can refuse a body, query or header (400, 422): how to find that
   * object, so that one the caller does not have answers 404 first (path-object.ts).
   */
  pathObject?: PathObjectFinder;
}

/** A route that renders its domain's result itself: `present` is its answer, and what an Idempotency-Key keeps. */
export interface PresentingRouteOptions<T> extends RouteOptions {
  present: (result: T) => HttpResult;
}

export type RouteHandler<T = HttpResult> = (request: HttpRequest<T>, caller: Caller) => Promise<T>;

/**
 * The one middy stack every HTTP handler uses: thin handlers get a parsed request and the caller, and
 * return their result; everything else (ids, the rate count, parsing, Idempotency-Key, errors, logs) happens
 * here. A route with `present` returns its domain's result, and the stack renders it: so the answer an
 * Idempotency-Key keeps is rendered before the domain writes (request.attach), and the domain knows no HTTP.
 *
 * The middlewares, outermost first: httpContext (ids, log, counts, the error answer), requireScope (the route's
 * scope, before anything else), rateCount, storedKey (the key routes: the calling key as stored), pathObjectFirst
 * (a route naming an object: its 404 before a refused body), jsonBody, idempotency. Each request runs inside its
 * request scope (lib/request-scope.ts: deadline, rate count, log keys), entered around the whole stack
 * (inRequestScope) so that every middleware's store calls and log lines have it too.
 */
export function httpHandler(options: RouteOptions, handle: RouteHandler): ReturnType<typeof inRequestScope>;
export function httpHandler<T>(
  options: PresentingRouteOptions<T>,
  handle: RouteHandler<T>,
): ReturnType<typeof inRequestScope>;
export function httpHandler<T>(
  options: RouteOptions & { present?: (result: T) => HttpResult },
  handle: RouteHandler<T>,
) {
  const present = options.present ?? ((result: T) => result as HttpResult);
  const stack = middy<Event, Result, Error, Context, Internal>({ timeoutEarlyInMillis: 0 })
    .use(httpContext(options))
    .use(requireScope(options.route))
    .use(rateCount());
  if (options.route.scope === KEY_ROUTES_SCOPE) stack.use(storedKey());
  // Its onError runs before rateCount's, which renders the error: a refused body of no object becomes a 404.
  if (options.pathObject) stack.use(pathObjectFirst(options.pathObject));
  if (options.body) stack.use(jsonBody());
  stack.use(idempotency());
  stack.handler(async (event, context) => {
    const internal = internalOf(context);
    if (internal.replay) return internal.replay;
    const caller = callerOf(event);
    const call = internal.idempotency;
    const params = paramsOf(event);
    const request: HttpRequest<T> = {
      method: event.httpMethod,
      path: event.path,
      resourcePath: resourcePathOf(options.route.path, event, params),
      params,
      header: (name) => headerOf(event, name),
      query: queryOf(event),
      body: internal.body,
      requestId: internal.requestId,
      baseUrl: baseUrlOf(event),
      attach: call ? commitHook(call, present) : undefined,
    };
    const answer = present(await handle(request, caller));
    internal.answer = answer;
    if (answer.binary)
      return binaryResponse(answer.statusCode, answer.binary, internal.requestId, answer.headers);
    return jsonResponse(answer.statusCode, answer.body, internal.requestId, answer.headers);
  });
  return inRequestScope(options.route, stack);
}
