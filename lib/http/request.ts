import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { Caller } from '#lib/accounts/api-keys.ts';
import { PLAN_RATE_LIMITS, PLANS, type Plan } from '#lib/accounts/types.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { Unauthenticated } from '#lib/errors.ts';
import { pickRequestId } from './response.ts';

/**
 * What a route handler sees of a request: no API Gateway types beyond this module. `T` is the result of the
 * route's domain call (what its `present` renders).
 */
export interface HttpRequest<T = HttpResult> {
  method: string;
  path: string;
  /**
   * The route's own path with its parameters filled in (`/api/webhooks/{webhook}/deliveries` →
   * `/api/webhooks/we_…/deliveries`): what the answer's links name, so the domain never spells a route's path.
   */
  resourcePath: string;
  /** Every query parameter with all its values, in order (`?a=1&a=2` → `{ a: ['1', '2'] }`). */
  query: Record<string, string[]>;
  /** Path parameters of the route (`{ticket}` → `params.ticket`), percent-decoded. */
  params: Record<string, string>;
  /** A request header by case-insensitive name. */
  header(name: string): string | undefined;
  /** Parsed JSON object body (POST routes); undefined for bodiless requests. */
  body: Record<string, unknown> | undefined;
  requestId: string;
  /** Scheme, host and stage prefix the client called, e.g. `https://api.example.com/prod`. */
  baseUrl: string;
  /**
   * For a write sent with an Idempotency-Key: the hook the domain calls with the result it is about to write,
   * giving what its transaction writes with the change (the answer, as the route renders it, kept with the
   * key). Undefined without a key.
   */
  attach: ((result: T) => CommitAttachment) | undefined;
}

export interface HttpResult {
  statusCode: number;
  body: unknown;
  /** Headers besides Content-Type and X-Request-Id (ETag, ...). */
  headers?: Record<string, string>;
  /** Bytes to answer instead of a JSON body (raw mail, an attachment): sent base64, as API Gateway wants them. */
  binary?: { contentType: string; bytes: Buffer };
}

/** Every value of a header, by case-insensitive name (API Gateway passes repeated headers in multiValueHeaders). */
export function headerValues(event: APIGatewayProxyEvent, name: string): string[] {
  const wanted = name.toLowerCase();
  const values: string[] = [];
  for (const [key, list] of Object.entries(event.multiValueHeaders ?? {})) {
    if (key.toLowerCase() === wanted) values.push(...(list ?? []));
  }
  if (values.length > 0) return values;
  const single = headerOf(event, name);
  return single === undefined ? [] : [single];
}

export function headerOf(event: APIGatewayProxyEvent, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

export function requestIdOf(event: APIGatewayProxyEvent): string {
  return pickRequestId(headerOf(event, 'x-request-id'), event.requestContext?.requestId ?? 'unknown');
}

/** The account that the authorizer resolved, passed by API Gateway in the request context. */
export function callerOf(event: APIGatewayProxyEvent): Caller {
  const context = event.requestContext?.authorizer ?? {};
  const { accountId, plan, keyId, rateLimit, scopes } = context as Record<string, unknown>;
  if (typeof accountId !== 'string' || !PLANS.includes(plan as Plan) || typeof keyId !== 'string') {
    throw new Unauthenticated();
  }
  // API Gateway passes authorizer context values as strings.
  const limit = Number(rateLimit);
  return {
    accountId,
    plan: plan as Plan,
    keyId,
    rateLimit: Number.isInteger(limit) && limit > 0 ? limit : PLAN_RATE_LIMITS[plan as Plan],
    scopes: typeof scopes === 'string' ? scopes : '',
  };
}

/** A route's path template with the request's parameters in place; without a template, the path as sent. */
export function resourcePathOf(
  template: string | undefined,
  event: APIGatewayProxyEvent,
  params: Record<string, string>,
): string {
  return template === undefined
    ? event.path
    : template.replace(/\{(\w+)\}/g, (_, name) => params[name] ?? '');
}

/** The path parameters API Gateway passed (`{ticket}` → its decoded segment). */
export function paramsOf(event: APIGatewayProxyEvent): Record<string, string> {
  return Object.fromEntries(
    Object.entries(event.pathParameters ?? {}).filter((e): e is [string, string] => e[1] !== undefined),
  );
}

export function queryOf(event: APIGatewayProxyEvent): Record<string, string[]> {
  // A Map: the names are the client's, and `query[name] = ...` would set the prototype for `__proto__`.
  const query = new Map<string, string[]>();
  for (const [key, values] of Object.entries(event.multiValueQueryStringParameters ?? {})) {
    if (values) query.set(key, values);
  }
  for (const [key, value] of Object.entries(event.queryStringParameters ?? {})) {
    if (value !== undefined && !query.has(key)) query.set(key, [value]);
  }
  return Object.fromEntries(query);
}

/**
 * The base URL of links: API Gateway's own domain name and scheme (X-Forwarded-Proto is set by the gateway,
 * and only http or https is taken), never the client's Host header.
 */
export function baseUrlOf(event: APIGatewayProxyEvent): string {
  const proto = headerOf(event, 'x-forwarded-proto') === 'http' ? 'http' : 'https';
  const host = event.requestContext?.domainName ?? 'localhost';
  return `${proto}://${host}${stagePathOf(event)}`;
}

/** The path before the route's own: `/prod` on API Gateway's default domain, '' locally or on a custom domain. */
export function stagePathOf(event: APIGatewayProxyEvent): string {
  const fullPath = event.requestContext?.path ?? event.path;
  return fullPath.endsWith(event.path) ? fullPath.slice(0, fullPath.length - event.path.length) : '';
}
