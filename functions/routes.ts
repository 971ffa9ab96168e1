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
  /** The DynamoDB actions the function uses on the table: its IAM policy allows exactly these. */
  readonly tableActions: readonly TableAction[];
}

/** DynamoDB actions a function may be granted (a transaction needs the action of each of its items). */
export type TableAction =
  | 'GetItem'
  | 'BatchGetItem'
  | 'Query'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'BatchWriteItem';

export const authorizerEntry = 'functions/authorizer.ts';
/** The authorizer reads keys and accounts, and writes a key's last-used time. */
export const authorizerTableActions: readonly TableAction[] = ['GetItem', 'UpdateItem'];

export const routes: readonly RouteDefinition[] = [
  {
    name: 'listPipelines',
    method: 'GET',
    path: '/api/pipelines',
    entry: 'functions/pipelines-list.ts',
    auth: true,
    tableActions: ['Query'],
  },
  {
    name: 'createTicket',
    method: 'POST',
    path: '/api/tickets',
    entry: 'functions/tickets-create.ts',
    auth: true,
    // BatchWriteItem: the marked items of the largest tickets; DeleteItem: releasing an Idempotency-Key.
    tableActions: ['Query', 'GetItem', 'UpdateItem', 'PutItem', 'BatchWriteItem', 'DeleteItem'],
  },
  {
    name: 'listTickets',
    method: 'GET',
    path: '/api/tickets',
    entry: 'functions/tickets-list.ts',
    auth: true,
    tableActions: ['Query', 'BatchGetItem'],
  },
  {
    name: 'createDeal',
    method: 'POST',
    path: '/api/deals',
    entry: 'functions/deals-create.ts',
    auth: true,
    tableActions: ['Query', 'GetItem', 'UpdateItem', 'PutItem', 'DeleteItem'],
  },
];

/** Methods served on a path, for the 405 answer's Allow header. */
export function methodsOf(path: string): HttpMethod[] {
  return routes.filter((r) => r.path === path).map((r) => r.method);
}

export const paths: readonly string[] = [...new Set(routes.map((r) => r.path))];
