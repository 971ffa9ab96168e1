import { PLAN_REQUIRED_MESSAGE } from '#lib/accounts/api-keys.ts';

/**
 * Answers that API Gateway itself gives (before or instead of a handler), with the same bodies as the
 * handlers' errors. The CDK stack turns these into gateway responses and the local gateway serves them,
 * so both answer alike. `$context.requestId` is filled in by API Gateway (and by the local gateway).
 */
export interface GatewayAnswer {
  statusCode: number;
  body: Record<string, string>;
  /** Headers besides Content-Type and X-Request-Id, as static values. */
  headers?: Record<string, string>;
}

export const REQUEST_ID_PLACEHOLDER = '$context.requestId';

export const gatewayAnswers = {
  /** No Authorization header, or the authorizer threw "Unauthorized". */
  UNAUTHORIZED: { statusCode: 401, body: { message: 'Unauthenticated.' } },
  /** The authorizer answered Deny: a plan without API access. */
  ACCESS_DENIED: { statusCode: 403, body: { message: PLAN_REQUIRED_MESSAGE } },
  /** REST APIs answer an unknown path with this type (403 by default); we say 404 like any router. */
  MISSING_AUTHENTICATION_TOKEN: { statusCode: 404, body: { message: 'Not found.' } },
  RESOURCE_NOT_FOUND: { statusCode: 404, body: { message: 'Not found.' } },
  REQUEST_TOO_LARGE: { statusCode: 413, body: { message: 'The request body must not exceed 1 MiB.' } },
  /**
   * Over the stage's throttle or the account's usage plan (lib/accounts/edge-limits.ts): refused before any
   * function runs, so without the per-minute count's headers; a token comes back within a second at every plan's rate.
   */
  THROTTLED: {
    statusCode: 429,
    body: { message: 'Too many requests.' },
    headers: { 'Retry-After': '1' },
  },
  QUOTA_EXCEEDED: { statusCode: 429, body: { message: 'Too many requests.' } },
  /**
   * The authorizer failed (it logs why): almost always the store being unreachable or slow, so the client is
   * told to retry, as the handlers tell it when the store fails under them.
   */
  AUTHORIZER_FAILURE: {
    statusCode: 503,
    body: { message: 'Service temporarily unavailable.' },
    headers: { 'Retry-After': '1' },
  },
  AUTHORIZER_CONFIGURATION_ERROR: {
    statusCode: 500,
    body: { message: 'Server error.', request_id: REQUEST_ID_PLACEHOLDER },
  },
  DEFAULT_5XX: { statusCode: 502, body: { message: 'Server error.', request_id: REQUEST_ID_PLACEHOLDER } },
} as const satisfies Record<string, GatewayAnswer>;

export type GatewayAnswerType = keyof typeof gatewayAnswers;

/** Body of the 405 that a known path gives for a method it does not serve (a mock integration when deployed). */
export const METHOD_NOT_ALLOWED_BODY = { message: 'Method not allowed.' };

/** API Gateway REST APIs refuse payloads over 10 MB themselves; the handlers' limit (1 MiB) is lower. */
export const GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024;

export function renderGatewayBody(answer: GatewayAnswer, requestId: string): string {
  const body: Record<string, string> = {};
  for (const [key, value] of Object.entries(answer.body)) {
    body[key] = value === REQUEST_ID_PLACEHOLDER ? requestId : value;
  }
  return JSON.stringify(body);
}
