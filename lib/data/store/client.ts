import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type BatchGetCommandOutput,
  BatchWriteCommand,
  type BatchWriteCommandOutput,
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandInput,
  type QueryCommandOutput,
  ScanCommand,
  type ScanCommandInput,
  type ScanCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { intEnv, requireEnv } from '#lib/config/env.ts';
import { ServiceUnavailable } from '#lib/errors.ts';
import { timeLeftMs } from '#lib/request-scope.ts';
import {
  conflictBackoffMs,
  isRefusedAsInvalid,
  isStoreUnavailable,
  isTransactionConflict,
  StoreRefused,
} from './errors.ts';
import { chunks } from './items.ts';
import { localStoreConfig } from './local-store.ts';

/**
 * One document client per container, created at module load and reused by every invocation.
 * DYNAMODB_ENDPOINT points it at DynamoDB Local; unset, it uses the AWS default chain.
 *
 * Time bounds, so that a stalled or dead store answers 503 before the function times out:
 * - each call makes at most DYNAMODB_MAX_ATTEMPTS attempts of at most DYNAMODB_REQUEST_TIMEOUT_MS each
 *   (connecting at most DYNAMODB_CONNECT_TIMEOUT_MS, 1 s): 3 × 2 s + backoff ≈ 6.3 s;
 * - and every attempt of a request's calls ends by the request's deadline (lib/request-scope.ts): the
 *   function's remaining time less 1.5 s (DEADLINE_MARGIN_MS), so 8.5 s into a request on the 10 s function.
 *   A request makes several calls one after another (the claim of its Idempotency-Key, its reads, its commit,
 *   a conflict's retry, releasing the claim after a failure): whatever they add up to, a stalled store
 *   answers 503 within 8.5 s of the request's start (docs/decisions.md, "Failures and retries").
 */
const endpoint = process.env.DYNAMODB_ENDPOINT;
export const storeTimeouts = {
  connectionTimeout: intEnv('DYNAMODB_CONNECT_TIMEOUT_MS', 1000),
  requestTimeout: intEnv('DYNAMODB_REQUEST_TIMEOUT_MS', 2000),
  maxAttempts: Math.max(1, intEnv('DYNAMODB_MAX_ATTEMPTS', 3)),
};

const lowLevel = new DynamoDBClient({
  ...(endpoint ? localStoreConfig(endpoint) : {}),
  maxAttempts: storeTimeouts.maxAttempts,
  requestHandler: {
    connectionTimeout: storeTimeouts.connectionTimeout,
    requestTimeout: storeTimeouts.requestTimeout,
    throwOnRequestTimeout: true,
  },
});

// Every attempt gets what is left of its request's deadline, as the abort signal of its HTTP request: past it,
// the attempt is aborted (AbortError: not retried by the SDK; a 503 below), and no attempt starts after it.
const transport = lowLevel.config.requestHandler;
const sendAttempt = transport.handle.bind(transport);
transport.handle = (request, options = {}) => {
  const left = timeLeftMs();
  if (left === Number.POSITIVE_INFINITY) return sendAttempt(request, options);
  if (left <= 0) return Promise.reject(deadlineAbort());
  const deadline = AbortSignal.timeout(left);
  const given = (options as { abortSignal?: AbortSignal }).abortSignal;
  const abortSignal = given ? AbortSignal.any([given, deadline]) : deadline;
  return sendAttempt(request, { ...options, abortSignal });
};

const deadlineAbort = () =>
  Object.assign(new Error("The request's deadline passed before the store answered"), { name: 'AbortError' });

export const dynamo = DynamoDBDocumentClient.from(lowLevel, {
  marshallOptions: { removeUndefinedValues: true },
});

// Outermost: once the SDK's own retries are spent, an unreachable, slow or throttling store is a 503 for the
// client (never a bare 500), whatever call it was. Conflicts stay as they are: the data layer retries them. A
// request refused as invalid (an item over 400 KB) is StoreRefused: a 500 for a client as before, and for the
// inbound handler a mail that can never be stored, told apart from one to try again.
dynamo.middlewareStack.add(
  (next) => async (args) => {
    try {
      return await next(args);
    } catch (error) {
      if (!isTransactionConflict(error) && isStoreUnavailable(error)) {
        throw new ServiceUnavailable(1, { cause: error });
      }
      if (isRefusedAsInvalid(error)) throw new StoreRefused({ cause: error });
      throw error;
    }
  },
  { step: 'initialize', name: 'storeUnavailable', priority: 'high' },
);

/**
 * The table, as TABLE_NAME names it now: read at each call (a property read), so a process whose modules outlive
 * one table (the api tests' workers share a module graph across files, each file with a table of its own) never
 * writes to the one before.
 */
export function tableName(): string {
  return requireEnv('TABLE_NAME');
}

/** One item by key (strongly consistent unless `eventual`), or undefined. */
export async function getItem(
  key: Record<string, unknown>,
  options: { eventual?: boolean } = {},
): Promise<Record<string, unknown> | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: !options.eventual }),
  );
  return Item;
}

/**
 * Every item of a Query, following LastEvaluatedKey; with `limit`, stops once that many are read; with `stopped`,
 * asks for no page after it says so (what was read is answered, short). One round trip per 1 MB page (or per
 * `limit`).
 */
export async function queryAll(
  input: QueryCommandInput,
  limit?: number,
  stopped?: () => boolean,
): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page: QueryCommandOutput = await dynamo.send(
      new QueryCommand({
        ...input,
        ExclusiveStartKey: startKey,
        ...(limit !== undefined ? { Limit: limit - items.length } : {}),
      }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey && (limit === undefined || items.length < limit) && !stopped?.());
  return items;
}

/** Every item a Scan returns, following LastEvaluatedKey (maintenance and tests only: it reads the table). */
export async function scanAll(input: ScanCommandInput): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page: ScanCommandOutput = await dynamo.send(
      new ScanCommand({ ...input, ExclusiveStartKey: startKey }),
    );
    items.push(...(page.Items ?? []));
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return items;
}

/**
 * Items by key, strongly consistent: chunks of 100 in parallel, unprocessed keys asked again after a pause. `projection`
 * reads only those attributes (names without placeholders).
 */
export async function batchGetAll(
  keys: Record<string, unknown>[],
  projection?: string,
): Promise<Record<string, unknown>[]> {
  const groups = await Promise.all(
    chunks(keys, 100).map(async (group) => {
      const found: Record<string, unknown>[] = [];
      let pending: Record<string, unknown>[] | undefined = group;
      for (let asked = 0; pending && pending.length > 0; asked++) {
        if (asked > 0) await leftOverPause(asked);
        const { Responses, UnprocessedKeys }: BatchGetCommandOutput = await dynamo.send(
          new BatchGetCommand({
            RequestItems: {
              [tableName()]: {
                Keys: pending,
                ConsistentRead: true,
                ...(projection ? { ProjectionExpression: projection } : {}),
              },
            },
          }),
        );
        found.push(...(Responses?.[tableName()] ?? []));
        pending = UnprocessedKeys?.[tableName()]?.Keys;
      }
      return found;
    }),
  );
  return groups.flat();
}

/**
 * Before asking again for what a batch left unprocessed (DynamoDB throttled part of it): a full-jitter pause that
 * widens with each time (conflictBackoffMs), as AWS advises, rather than asking a throttled partition again at once
 * in a loop. Real time: the store's, not the clock tests advance.
 */
const leftOverPause = (times: number) =>
  new Promise((resolve) => setTimeout(resolve, conflictBackoffMs(times)));

/** Puts items (no conditions): chunks of 25, one after another, unprocessed items sent again. */
export async function batchPutAll(items: Record<string, unknown>[]): Promise<void> {
  await batchWriteAll(items.map((Item) => ({ PutRequest: { Item } })));
}

/** Deletes items by key (no conditions), as batchPutAll puts them. */
export async function batchDeleteAll(keys: Record<string, unknown>[]): Promise<void> {
  await batchWriteAll(keys.map((Key) => ({ DeleteRequest: { Key } })));
}

async function batchWriteAll(all: Record<string, unknown>[]): Promise<void> {
  for (const group of chunks(all, 25)) {
    let requests: Record<string, unknown>[] | undefined = group;
    for (let sent = 0; requests && requests.length > 0; sent++) {
      if (sent > 0) await leftOverPause(sent);
      const { UnprocessedItems }: BatchWriteCommandOutput = await dynamo.send(
        new BatchWriteCommand({ RequestItems: { [tableName()]: requests } }),
      );
      requests = UnprocessedItems?.[tableName()];
    }
  }
}
