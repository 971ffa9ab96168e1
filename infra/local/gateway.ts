import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type {
  APIGatewayAuthorizerResult,
  APIGatewayProxyEvent,
  APIGatewayProxyResult,
  APIGatewayTokenAuthorizerEvent,
  Context,
} from 'aws-lambda';
import { authorizerEntry, matchPath, methodsOf, type RouteDefinition, routes } from '#functions/routes.ts';
import {
  GATEWAY_MAX_BODY_BYTES,
  type GatewayAnswer,
  type GatewayAnswerType,
  gatewayAnswers,
  METHOD_NOT_ALLOWED_BODY,
  renderGatewayBody,
} from '#infra/api-contract.ts';
import { edgeLimitsOf } from '#lib/accounts/edge-limits.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';
import { pickRequestId } from '#lib/http/response.ts';
import { nowMillis } from '#lib/time.ts';
import { EdgeThrottle } from './edge-throttle.ts';
import { serveImportUpload } from './uploads.ts';

/**
 * A local stand-in for the deployed API Gateway REST API, built from the same route table: it builds the
 * same Lambda proxy events, runs the TOKEN authorizer with API Gateway's caching (keyed by the Authorization
 * header), throttles each account as its usage plan does (./edge-throttle.ts), passes the authorizer's context to
 * the handler, invokes handlers in-process and answers the gateway's own errors exactly as the stack's gateway
 * responses do. See docs/architecture.md.
 */
export interface GatewayOptions {
  /** Seconds an authorizer answer is cached per Authorization header; 0 turns caching off. */
  authCacheTtlSeconds: number;
  /** Repository root that route entries are relative to. */
  root: string;
  /**
   * The base URL clients call (`http://127.0.0.1:3000`): the only source of the scheme and host that handlers
   * see, as API Gateway passes its own domain name and scheme, never what a client put in Host or
   * X-Forwarded-Proto. Unset: `http://127.0.0.1:<the port listened on>`.
   */
  baseUrl?: string;
}

type ProxyHandler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
type TokenAuthorizer = (
  event: APIGatewayTokenAuthorizerEvent,
  context: Context,
) => Promise<APIGatewayAuthorizerResult>;

const STAGE = 'local';
/** How long an idle kept-alive connection stays open (listen(): why not Node's 5 s). */
export const GATEWAY_KEEP_ALIVE_MS = 65_000;
const METHOD_ARN_PREFIX = 'arn:aws:execute-api:local:000000000000:local';

export class LocalGateway {
  private readonly handlers = new Map<string, Promise<ProxyHandler>>();
  private readonly authCache = new Map<string, { expiresAt: number; result: APIGatewayAuthorizerResult }>();
  private authorizer: Promise<TokenAuthorizer> | undefined;
  private readonly edge = new EdgeThrottle();
  private baseUrl: URL;

  constructor(private readonly options: GatewayOptions) {
    this.baseUrl = new URL(options.baseUrl ?? 'http://127.0.0.1');
    // The functions this gateway serves run in this process, as the local stage's (lib/config/stage.ts): their
    // environment is the process's. The deployed stack never sets it.
    process.env[STAGE_VARIABLE] = LOCAL_STAGE;
  }

  /** Loads every handler module up front, so that the first request pays no import. */
  async warm(): Promise<void> {
    await Promise.all([this.loadAuthorizer(), ...routes.map((route) => this.loadHandler(route))]);
  }

  listen(port: number, host = '127.0.0.1'): Promise<Server> {
    const server = createServer((req, res) => {
      this.serve(req, res).catch((error) => {
        console.error(JSON.stringify({ level: 'error', msg: 'local gateway failure', error: String(error) }));
        if (!res.headersSent) this.answer(res, 'DEFAULT_5XX', randomUUID());
      });
    });
    // An idle kept-alive connection stays open 65 s, not Node's 5: a client paused longer than the server's idle
    // time (a busy machine: a side-by-side CI run once froze test clients for seconds) sends its next request on a
    // connection the server is closing, and a POST then fails with no answer ("other side closed"). Clients read
    // the time from the Keep-Alive header and close first. The headers' own limit stays above it, as Node asks.
    server.keepAliveTimeout = GATEWAY_KEEP_ALIVE_MS;
    server.headersTimeout = GATEWAY_KEEP_ALIVE_MS + 1_000;
    // A request Node's parser refuses (a raw space or a lowercase method in the request line, both
    // Transfer-Encoding and Content-Length, headers or URL over 16 KB) still gets a JSON answer with an id.
    server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
      const status = tooLarge ? 431 : 400;
      const body = JSON.stringify({
        message: tooLarge ? 'The request headers are too large.' : 'The request is malformed.',
      });
      socket.end(
        `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
          `Content-Type: application/json\r\nX-Request-Id: ${randomUUID()}\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    });
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        if (!this.options.baseUrl) {
          const address = server.address();
          if (typeof address === 'object' && address) this.baseUrl.port = String(address.port);
        }
        resolve(server);
      });
    });
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = pickRequestId(headerValue(req, 'x-request-id'), randomUUID());
    const target = parseTarget(req.url ?? '/');
    const method = (req.method ?? 'GET').toUpperCase();
    // An ndjson import's file, streamed to the local object store (a presigned S3 PUT deployed): no body limit.
    if (await serveImportUpload(req, res, this.baseUrl)) return;

    // Like API Gateway, refuse an oversized payload at the front door, before routing.
    const body = await readBody(req);
    if (body === undefined) return this.answer(res, 'REQUEST_TOO_LARGE', requestId);

    const resource = target && matchPath(target.path);
    if (!target || !resource) return this.answer(res, 'MISSING_AUTHENTICATION_TOKEN', requestId);
    const resourcePath = resource.path;
    const route = routes.find((r) => r.path === resourcePath && r.method === method);
    if (!route) {
      // Deployed, each path has an ANY method on a mock integration that answers this, without auth.
      res.writeHead(405, {
        'Content-Type': 'application/json',
        Allow: methodsOf(resourcePath).join(', '),
        'X-Request-Id': requestId,
      });
      res.end(JSON.stringify(METHOD_NOT_ALLOWED_BODY));
      return;
    }

    let authorizerContext: Record<string, unknown> = {};
    if (route.auth) {
      const outcome = await this.authorize(req.headers.authorization, route, requestId);
      if (typeof outcome === 'string') return this.answer(res, outcome, requestId);
      if (!this.withinEdgeLimits(outcome)) return this.answer(res, 'THROTTLED', requestId);
      authorizerContext = { principalId: outcome.principalId, ...outcome.context };
    }

    const event = buildProxyEvent(req, target, route, body, requestId, authorizerContext, this.baseUrl);
    event.pathParameters = Object.keys(resource.params).length > 0 ? resource.params : null;
    const handler = await this.loadHandler(route);
    let result: APIGatewayProxyResult;
    try {
      result = await handler(event, lambdaContext(route.name, requestId));
    } catch (error) {
      // A handler that throws is a Lambda error: API Gateway answers with its 5XX response.
      console.error(
        JSON.stringify({ level: 'error', msg: 'handler threw', route: route.name, error: String(error) }),
      );
      return this.answer(res, 'DEFAULT_5XX', requestId);
    }
    writeResult(res, result);
  }

  /** Runs the TOKEN authorizer as API Gateway does: the policy is cached per Authorization header value. */
  private async authorize(
    header: string | undefined,
    route: RouteDefinition,
    requestId: string,
  ): Promise<APIGatewayAuthorizerResult | GatewayAnswerType> {
    if (!header) return 'UNAUTHORIZED';
    const ttlMs = this.options.authCacheTtlSeconds * 1000;
    const cached = this.authCache.get(header);
    let result: APIGatewayAuthorizerResult;
    if (cached && cached.expiresAt > nowMillis()) {
      result = cached.result;
    } else {
      const authorizer = await this.loadAuthorizer();
      try {
        result = await authorizer(
          {
            type: 'TOKEN',
            authorizationToken: header,
            methodArn: `${METHOD_ARN_PREFIX}/${STAGE}/${route.method}${route.path}`,
          },
          lambdaContext('authorizer', requestId),
        );
      } catch (error) {
        return (error as Error).message === 'Unauthorized' ? 'UNAUTHORIZED' : 'AUTHORIZER_FAILURE';
      }
      if (ttlMs > 0) this.authCache.set(header, { expiresAt: nowMillis() + ttlMs, result });
    }
    const allowed = result.policyDocument.Statement.some((s) => 'Effect' in s && s.Effect === 'Allow');
    return allowed ? result : 'ACCESS_DENIED';
  }

  /**
   * The usage plan's throttle, as API Gateway applies it after the authorizer: a bucket per the API key it names
   * (usageIdentifierKey), at the figures of the account's per-minute limit (its plan's, or its own: the rule the
   * stack's usage plans and the admin path's per-account ones are made by, lib/accounts/edge-limits.ts).
   */
  private withinEdgeLimits(result: APIGatewayAuthorizerResult): boolean {
    const key = result.usageIdentifierKey;
    const perMinute = Number(result.context?.rateLimit);
    if (!key || !Number.isFinite(perMinute)) return true;
    return this.edge.take(key, edgeLimitsOf(String(result.context?.plan), perMinute), nowMillis());
  }

  private answer(res: ServerResponse, type: GatewayAnswerType, requestId: string): void {
    const answer: GatewayAnswer = gatewayAnswers[type];
    res.writeHead(answer.statusCode, {
      'Content-Type': 'application/json',
      'X-Request-Id': requestId,
      ...answer.headers,
    });
    res.end(renderGatewayBody(answer, requestId));
  }

  private loadHandler(route: RouteDefinition): Promise<ProxyHandler> {
    let handler = this.handlers.get(route.entry);
    if (!handler) {
      handler = this.importHandler<ProxyHandler>(route.entry);
      this.handlers.set(route.entry, handler);
    }
    return handler;
  }

  private loadAuthorizer(): Promise<TokenAuthorizer> {
    this.authorizer ??= this.importHandler<TokenAuthorizer>(authorizerEntry);
    return this.authorizer;
  }

  private async importHandler<T>(entry: string): Promise<T> {
    const module = (await import(pathToFileURL(join(this.options.root, entry)).href)) as { handler?: T };
    if (typeof module.handler !== 'function') throw new Error(`${entry} does not export a handler`);
    return module.handler;
  }
}

/** The body as text, or undefined when it passes API Gateway's own payload limit. */
async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > GATEWAY_MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The path and query of a request target, taken as sent: no dot segments resolved, no host read from it. */
interface Target {
  path: string;
  query: URLSearchParams;
}

function parseTarget(raw: string): Target | undefined {
  if (!raw.startsWith('/')) return undefined;
  const at = raw.indexOf('?');
  return {
    path: at < 0 ? raw : raw.slice(0, at),
    query: new URLSearchParams(at < 0 ? '' : raw.slice(at + 1)),
  };
}

function headerValue(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The REST API (v1) Lambda proxy event, as API Gateway builds it. */
function buildProxyEvent(
  req: IncomingMessage,
  target: Target,
  route: RouteDefinition,
  body: string,
  requestId: string,
  authorizer: Record<string, unknown>,
  baseUrl: URL,
): APIGatewayProxyEvent {
  // Keyed by what the client sent: Maps, so that a name like `constructor` or `__proto__` finds nothing
  // inherited (the event's objects are then built as JSON.parse builds API Gateway's: own properties only).
  const headers = new Map<string, string>();
  const multiValueHeaders = new Map<string, string[]>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i] as string;
    const value = req.rawHeaders[i + 1] as string;
    // API Gateway sets these itself: the client's values never reach a handler.
    if (/^(host|x-forwarded-proto)$/i.test(name)) continue;
    headers.set(name, value);
    multiValueHeaders.set(name, [...(multiValueHeaders.get(name) ?? []), value]);
  }
  const scheme = baseUrl.protocol.replace(/:$/, '');
  headers.set('Host', baseUrl.host).set('X-Forwarded-Proto', scheme);
  multiValueHeaders.set('Host', [baseUrl.host]).set('X-Forwarded-Proto', [scheme]);
  const query = new Map<string, string>();
  const multiQuery = new Map<string, string[]>();
  for (const [key, value] of target.query) {
    query.set(key, value);
    multiQuery.set(key, [...(multiQuery.get(key) ?? []), value]);
  }
  const hasQuery = query.size > 0;
  const now = nowMillis();
  return {
    resource: route.path,
    path: target.path,
    httpMethod: route.method,
    headers: Object.fromEntries(headers),
    multiValueHeaders: Object.fromEntries(multiValueHeaders),
    queryStringParameters: hasQuery ? Object.fromEntries(query) : null,
    multiValueQueryStringParameters: hasQuery ? Object.fromEntries(multiQuery) : null,
    pathParameters: null,
    stageVariables: null,
    body: body.length > 0 ? body : null,
    isBase64Encoded: false,
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      authorizer,
      domainName: baseUrl.host,
      httpMethod: route.method,
      identity: {
        sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
        userAgent: req.headers['user-agent'] ?? null,
      } as APIGatewayProxyEvent['requestContext']['identity'],
      path: target.path,
      protocol: `HTTP/${req.httpVersion}`,
      requestId,
      requestTimeEpoch: now,
      resourceId: route.name,
      resourcePath: route.path,
      stage: STAGE,
    },
  };
}

/** The context a function gets: its timeout is the deployed one, so a handler's deadline is the deployed one. */
function lambdaContext(functionName: string, requestId: string): Context {
  const deadline = nowMillis() + FUNCTION_TIMEOUT_MS;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - nowMillis()),
    done: () => {},
    fail: () => {},
    succeed: () => {},
  };
}

function writeResult(res: ServerResponse, result: APIGatewayProxyResult): void {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  for (const [name, values] of Object.entries(result.multiValueHeaders ?? {}))
    headers[name] = values.map(String);
  res.writeHead(result.statusCode, headers);
  res.end(result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body);
}
