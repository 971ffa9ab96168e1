import { randomUUID } from 'node:crypto';
import type { APIGatewayProxyEvent, APIGatewayTokenAuthorizerEvent, Context } from 'aws-lambda';
import type { Caller } from '#lib/accounts/api-keys.ts';

/** Factories for the events API Gateway sends, so a test reads as the scenario it checks. */
export interface ProxyEventInput {
  method?: string;
  path: string;
  caller?: Caller;
  body?: string | Record<string, unknown>;
  headers?: Record<string, string>;
  query?: Record<string, string | string[]>;
}

export function proxyEvent(input: ProxyEventInput): APIGatewayProxyEvent {
  const method = input.method ?? 'GET';
  const body =
    input.body === undefined
      ? null
      : typeof input.body === 'string'
        ? input.body
        : JSON.stringify(input.body);
  const headers: Record<string, string> = {
    Host: 'api.test',
    'X-Forwarded-Proto': 'https',
    ...(body !== null && typeof input.body === 'object' ? { 'Content-Type': 'application/json' } : {}),
    ...input.headers,
  };
  const multi: Record<string, string[]> = {};
  const single: Record<string, string> = {};
  for (const [key, value] of Object.entries(input.query ?? {})) {
    const values = Array.isArray(value) ? value : [value];
    multi[key] = values;
    single[key] = values[values.length - 1] as string;
  }
  const hasQuery = Object.keys(single).length > 0;
  return {
    resource: input.path,
    path: input.path,
    httpMethod: method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: hasQuery ? single : null,
    multiValueQueryStringParameters: hasQuery ? multi : null,
    pathParameters: null,
    stageVariables: null,
    body,
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'test',
      domainName: 'api.test',
      authorizer: input.caller ? { principalId: input.caller.keyId, ...input.caller } : null,
      httpMethod: method,
      identity: { sourceIp: '127.0.0.1' } as APIGatewayProxyEvent['requestContext']['identity'],
      path: `/test${input.path}`,
      protocol: 'HTTP/1.1',
      requestId: randomUUID(),
      requestTimeEpoch: Date.now(),
      resourceId: 'test',
      resourcePath: input.path,
      stage: 'test',
    },
  };
}

/**
 * An event for a route with path parameters, as API Gateway sends it: `resource` (`/api/deals/{deal}`) with
 * `params` filled into its path, and the parameters themselves.
 */
export function routeEvent(
  method: string,
  resource: string,
  params: Record<string, string>,
  caller: Caller,
  body?: Record<string, unknown>,
): APIGatewayProxyEvent {
  const path = resource.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ''));
  return { ...proxyEvent({ method, path, caller, body }), resource, pathParameters: params };
}

/** An event for /api/tickets/{ticket}, as API Gateway sends it (the path parameter included). */
export function ticketEvent(
  method: string,
  ref: string,
  caller: Caller,
  body?: Record<string, unknown>,
): APIGatewayProxyEvent {
  return routeEvent(method, '/api/tickets/{ticket}', { ticket: ref }, caller, body);
}

export function tokenEvent(authorizationToken: string): APIGatewayTokenAuthorizerEvent {
  return {
    type: 'TOKEN',
    authorizationToken,
    methodArn: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/GET/api/pipelines',
  };
}

export const lambdaContext = { awsRequestId: 'test', functionName: 'test' } as Context;

export function callerOf(account: { accountId: string }): Caller {
  return { accountId: account.accountId, plan: 'pro', keyId: 'key_test', rateLimit: 1_000_000, scopes: '*' };
}
