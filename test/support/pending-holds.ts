import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { dynamo, queryAll, scanAll, tableName } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import type { Answer } from './http.ts';

/**
 * Holds for the pending creates' tests (test/api/pending-creates-*.test.ts): holds on the service's DynamoDB calls, several at once, each
 * released by the test with what the call then does (goes on, or fails as DynamoDB or the network fails it).
 */

export type Outcome =
  | 'pass'
  | 'cancel' // TransactionCanceledException, ConditionalCheckFailed on the ticket's put (a lost race): unsent
  | 'timeout-unsent' // TimeoutError, the call never reached the store
  | 'timeout-landed' // the store did the work, then the answer was lost
  | 'throttle' // ProvisionedThroughputExceededException (after the SDK's retries), unsent
  | 'conflict'; // TransactionConflictException: a plain write of an item a transaction in flight holds, unsent

export interface Hold {
  /** Resolves once the held call was reached (and is waiting). */
  reached: Promise<void>;
  release(outcome?: Outcome): void;
  /** Whether the held call was reached. */
  wasReached(): boolean;
}

interface Entry {
  command: string;
  needle: (input: Record<string, unknown>) => boolean;
  reachedResolve: () => void;
  gate: Promise<Outcome>;
  used: boolean;
}

const entries: Entry[] = [];
let installed = false;

export const cancelled = (reasons: { Code: string }[]) =>
  Object.assign(new Error('cancelled (injected)'), {
    name: 'TransactionCanceledException',
    CancellationReasons: reasons,
    $metadata: { httpStatusCode: 400 },
  });

function errorOf(outcome: Outcome, input: Record<string, unknown>): Error {
  if (outcome === 'cancel') {
    // The ticket's put is the action whose item has type TICKET (after the pending item's delete).
    const items = (input.TransactItems as Record<string, unknown>[] | undefined) ?? [];
    const reasons = items.map((a) => {
      const put = a.Put as { Item?: Record<string, unknown>; ConditionExpression?: string } | undefined;
      const type = JSON.stringify(put?.Item?.type ?? null);
      const isTicket =
        put?.ConditionExpression === 'attribute_not_exists(pk)' && /"ticket"/.test(type) && !/_/.test(type);
      return { Code: isTicket ? 'ConditionalCheckFailed' : 'None' };
    });
    if (!reasons.some((r) => r.Code !== 'None')) reasons[1] = { Code: 'ConditionalCheckFailed' };
    return cancelled(reasons);
  }
  if (outcome === 'conflict') {
    return Object.assign(new Error('Transaction is ongoing for the item (injected)'), {
      name: 'TransactionConflictException',
      $metadata: { httpStatusCode: 400 },
    });
  }
  if (outcome === 'throttle') {
    return Object.assign(new Error('throttled (injected)'), {
      name: 'ProvisionedThroughputExceededException',
      $metadata: { httpStatusCode: 400 },
      $retryable: { throttling: true },
    });
  }
  return Object.assign(new Error('response timed out (injected)'), { name: 'TimeoutError' });
}

function install() {
  if (installed) return;
  installed = true;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const input = (args as { input?: Record<string, unknown> }).input ?? {};
      const entry = entries.find((e) => !e.used && e.command === context.commandName && e.needle(input));
      if (!entry) return next(args);
      entry.used = true;
      entry.reachedResolve();
      const outcome = await entry.gate;
      if (outcome === 'pass') return next(args);
      if (outcome === 'timeout-landed') {
        await next(args);
        throw errorOf(outcome, input);
      }
      throw errorOf(outcome, input);
    },
    { step: 'initialize', name: 'advHolds', priority: 'low' },
  );
}

/** Holds the first call of `command` that `needle` accepts until released. */
export function hold(command: string, needle: (input: Record<string, unknown>) => boolean): Hold {
  install();
  let reachedResolve!: () => void;
  const reached = new Promise<void>((r) => {
    reachedResolve = r;
  });
  let release!: (o: Outcome) => void;
  const gate = new Promise<Outcome>((r) => {
    release = r;
  });
  const entry: Entry = { command, needle, reachedResolve, gate, used: false };
  entries.push(entry);
  let was = false;
  entry.reachedResolve = () => {
    was = true;
    reachedResolve();
  };
  return { reached, release: (o = 'pass') => release(o), wasReached: () => was };
}

/** Fails (without holding) the first call `needle` accepts. */
export function failNext(
  command: string,
  needle: (input: Record<string, unknown>) => boolean,
  outcome: Outcome,
) {
  const h = hold(command, needle);
  h.release(outcome);
  return h;
}

export function clearHolds() {
  for (const e of entries) e.used = true;
  entries.length = 0;
}

export const mentions = (text: string) => (input: Record<string, unknown>) =>
  JSON.stringify(input).includes(text);

/** A create's commit: the transaction that puts a ticket whose item mentions `text`. */
export const commitOf = (text: string) => (input: Record<string, unknown>) =>
  JSON.stringify(input).includes(text) && JSON.stringify(input).includes('"Put"');

/** A create's block key added before its commit: an UpdateItem adding to a block's `p` set (ATTR.pendingBlockKeys). */
export const pendingBlockAdd = (input: Record<string, unknown>) =>
  /^ADD #k :key$/.test(String(input.UpdateExpression)) &&
  (input.ExpressionAttributeNames as Record<string, string> | undefined)?.['#k'] === 'p';

/** A create's marked puts: a BatchWriteItem of items marked `u` with a string, mentioning nothing in particular. */
export const markedPuts = (input: Record<string, unknown>) => {
  const items = Object.values((input.RequestItems as Record<string, unknown[]>) ?? {}).flat() as {
    PutRequest?: { Item?: Record<string, unknown> };
  }[];
  return items.some((r) => typeof r.PutRequest?.Item?.u === 'string');
};

export async function pendingItems(accountId: string) {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': tickets.index.keys.pendingPartition(accountId) },
    ConsistentRead: true,
  });
}

/** Moves every pending item of an account `ms` into the past (its `at`): a create older than a create can run. */
export async function agePendingItems(accountId: string, ms: number) {
  for (const item of await pendingItems(accountId))
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: { pk: item.pk, sk: item.sk },
        UpdateExpression: 'SET #at = :at',
        ExpressionAttributeNames: { '#at': 'at' },
        ExpressionAttributeValues: { ':at': Number(item.at) - ms },
      }),
    );
}

/** Every index item of an account marked with a string (a pending id). */
export async function markedItems(accountId: string) {
  const all = await scanAll({ TableName: tableName() });
  return all.filter((i) => String(i.pk).includes(accountId) && typeof i.u === 'string');
}

type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<Answer>;

/** A list's total and its tickets' uuids (every page of it, per_page each), checked to agree. */
export async function listAll(call: Call, query: string, perPage = 100) {
  const first = await call('GET', `/api/tickets?${query}&per_page=${perPage}`);
  expect(first.status, `${query}: ${first.text}`).toBe(200);
  const total = first.body.meta.total as number;
  const uuids: string[] = first.body.data.map((t: { uuid: string }) => t.uuid);
  for (let page = 2; (page - 1) * perPage < total && page < 50; page++) {
    const r = await call('GET', `/api/tickets?${query}&per_page=${perPage}&page=${page}`);
    expect(r.status, `${query} page ${page}: ${r.text}`).toBe(200);
    expect(r.body.meta.total, `${query} page ${page} total`).toBe(total);
    uuids.push(...r.body.data.map((t: { uuid: string }) => t.uuid));
  }
  return { total, uuids: [...uuids].sort(), listed: uuids.length };
}
