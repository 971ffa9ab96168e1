/**
 * The route table: the one list of the API's routes. The CDK stack builds API Gateway from it and the local
 * gateway serves it, so a route cannot exist in one and not the other (test/routes.test.ts checks it).
 * `entry` is relative to the repository root and must export `handler`.
 */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteDefinition {
  /** Stable name: the Lambda function's logical id and the route name in logs. */
  readonly name: string;
  readonly method: HttpMethod;
  readonly path: string;
  readonly entry: string;
  /** Whether the API key authorizer guards this route. */
  readonly auth: boolean;
  /** What the function may do on the table (least privilege in the stack). */
  readonly tableAccess: 'read' | 'readWrite';
}

export const authorizerEntry = 'functions/authorizer.ts';
/** The authorizer reads keys and accounts, and writes a key's last-used time. */
export const authorizerTableAccess = 'readWrite' as const;

export const routes: readonly RouteDefinition[] = [
  {
    name: 'listPipelines',
    method: 'GET',
    path: '/api/pipelines',
    entry: 'functions/pipelines-list.ts',
    auth: true,
    tableAccess: 'read',
  },
  {
    name: 'createTicket',
    method: 'POST',
    path: '/api/tickets',
    entry: 'functions/tickets-create.ts',
    auth: true,
    tableAccess: 'readWrite',
  },
  {
    name: 'listTickets',
    method: 'GET',
    path: '/api/tickets',
    entry: 'functions/tickets-list.ts',
    auth: true,
    tableAccess: 'read',
  },
  {
    name: 'createDeal',
    method: 'POST',
    path: '/api/deals',
    entry: 'functions/deals-create.ts',
    auth: true,
    tableAccess: 'readWrite',
  },
];

/** Methods served on a path, for the 405 answer's Allow header. */
export function methodsOf(path: string): HttpMethod[] {
  return routes.filter((r) => r.path === path).map((r) => r.method);
}

export const paths: readonly string[] = [...new Set(routes.map((r) => r.path))];
