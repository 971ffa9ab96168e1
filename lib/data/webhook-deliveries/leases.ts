import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import type { Endpoint } from '#lib/webhooks/types.ts';
import { webhookDeliveryKeys as keys, webhookKeys } from '../keys.ts';
import { dynamo, getItem, queryAll, tableName } from '../store/client.ts';
import { isConditionFailure, isTransactionConflict, retryOnConflict } from '../store/errors.ts';
import { endpointOf } from '../webhooks/webhooks.ts';

/** The due index, and the endpoint's lease: taken, renewed, and released to the earliest pending due. */

/** An entry of the due index: an endpoint with work due (or a lease ending) at `dueAt`. */
export interface DueEntry {
  accountId: string;
  endpointId: string;
  dueAt: number;
}

/**
 * Endpoints due at or before `now`, earliest first, at most `limit` (the due index: eventually consistent), in the
 * due shards given (all by default; a runner of the pool reads its own: due-shards.ts, shardsOfRunner). Every
 * partition read is read at once (one round trip), each for its earliest `limit`: the earliest `limit` of all are
 * among them.
 */
export async function dueEndpoints(
  now: number,
  limit: number,
  shards: readonly number[] = keys.duePartitions.map((_, shard) => shard),
): Promise<DueEntry[]> {
  const read = (partition: string) =>
    queryAll(
      {
        TableName: tableName(),
        IndexName: keys.dueIndex,
        KeyConditionExpression: 'gsi2pk = :pk AND gsi2sk < :before',
        ExpressionAttributeValues: { ':pk': partition, ':before': keys.dueBefore(now) },
        ProjectionExpression: 'gsi2sk',
      },
      limit,
    ).then((items) => items.map((item) => String(item.gsi2sk)));
  const sortKeys = (
    await Promise.all(shards.map((shard) => read(keys.duePartitions[shard] as string)))
  ).flat();
  // A sort key starts with its due time, zero-padded: lexical order is the index's own order across partitions.
  sortKeys.sort();
  return sortKeys.slice(0, limit).map((sk) => keys.parseDue(sk));
}

/** Sets the endpoint's due entry (the keys-only index) to `:pk`, `:sk`. */
const MOVE_TO_DUE_INDEX = 'gsi2pk = :pk, gsi2sk = :sk';

/** An endpoint as its lease holder sees it: the endpoint and the dispatcher's fields. */
export interface LeasedEndpoint {
  endpoint: Endpoint;
  /** Until when the endpoint is in the slow lane (epoch ms; marks.ts markSlow), or null. */
  slowUntil: number | null;
  leaseUntil: number;
}

/**
 * The endpoint item's attributes that are the dispatcher's, not the Endpoint's (../webhook-deliveries.ts says
 * what each is for): their one spelling.
 */
export const DISPATCH_ATTR = {
  leaseOwner: 'leaseOwner',
  leaseUntil: 'leaseUntil',
  dueVersion: 'dueVersion',
  slowUntil: 'slowUntil',
} as const;
const E = DISPATCH_ATTR;

function leasedOf(item: Record<string, unknown>): LeasedEndpoint {
  const endpoint = endpointOf(item) as Endpoint & Record<string, unknown>;
  for (const field of Object.values(DISPATCH_ATTR)) delete endpoint[field];
  return {
    endpoint,
    slowUntil: item[E.slowUntil] == null ? null : Number(item[E.slowUntil]),
    leaseUntil: Number(item[E.leaseUntil] ?? 0),
  };
}

/**
 * Takes the endpoint's lease for `owner` until now + leaseMs, when it is due now and no live lease holds it; its
 * due entry moves to the lease's end (a holder that dies leaves it due then). Answers the endpoint as stored, or
 * undefined when it is not due, is held, or is gone.
 */
export async function leaseEndpoint(
  accountId: string,
  endpointId: string,
  owner: string,
  leaseMs: number,
): Promise<LeasedEndpoint | undefined> {
  const now = nowMillis();
  const until = now + leaseMs;
  const entry = keys.due(accountId, endpointId, until);
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: webhookKeys.endpoint(accountId, endpointId),
        UpdateExpression: `SET ${E.leaseOwner} = :owner, ${E.leaseUntil} = :until, ${MOVE_TO_DUE_INDEX}`,
        ConditionExpression:
          'attribute_exists(gsi2sk) AND gsi2sk < :before AND ' +
          `(attribute_not_exists(${E.leaseUntil}) OR ${E.leaseUntil} < :now)`,
        ExpressionAttributeValues: {
          ':owner': owner,
          ':until': until,
          ':pk': entry.gsi2pk,
          ':sk': entry.gsi2sk,
          ':before': keys.dueBefore(now),
          ':now': now,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes ? leasedOf(Attributes) : undefined;
  } catch (error) {
    if (isConditionFailure(error) || isTransactionConflict(error)) return undefined;
    throw error;
  }
}

/**
 * Extends `owner`'s lease to now + leaseMs, and reads the endpoint again (a management write may have changed its
 * URL, secrets or events, or disabled it). Undefined when the lease was lost (or the endpoint deleted).
 */
export async function renewLease(
  accountId: string,
  endpointId: string,
  owner: string,
  leaseMs: number,
): Promise<LeasedEndpoint | undefined> {
  const until = nowMillis() + leaseMs;
  try {
    const { Attributes } = await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: webhookKeys.endpoint(accountId, endpointId),
          UpdateExpression: `SET ${E.leaseUntil} = :until, ${MOVE_TO_DUE_INDEX}`,
          ConditionExpression: `${E.leaseOwner} = :owner`,
          ExpressionAttributeValues: {
            ':owner': owner,
            ':until': until,
            ':pk': keys.due(accountId, endpointId, until).gsi2pk,
            ':sk': keys.due(accountId, endpointId, until).gsi2sk,
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return Attributes ? leasedOf(Attributes) : undefined;
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

/**
 * Ends `owner`'s lease: the due entry becomes the earliest pending delivery's due, or goes when none is pending.
 * Written on the condition that no pending item was added since the earliest was read (dueVersion), else read
 * again. Nothing when the lease is not `owner`'s any more.
 */
export async function releaseEndpoint(accountId: string, endpointId: string, owner: string): Promise<void> {
  const key = webhookKeys.endpoint(accountId, endpointId);
  for (;;) {
    const item = await getItem(key);
    if (!item || item[E.leaseOwner] !== owner) return;
    const version = item[E.dueVersion] as number | undefined;
    const [earliest] = await queryAll(
      {
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.pendingPartition(accountId, endpointId) },
        ProjectionExpression: 'sk',
        ConsistentRead: true,
      },
      1,
    );
    const due = earliest
      ? keys.due(accountId, endpointId, keys.parsePending(String(earliest.sk)).dueAt)
      : undefined;
    try {
      await retryOnConflict(() =>
        dynamo.send(
          new UpdateCommand({
            TableName: tableName(),
            Key: key,
            UpdateExpression: due
              ? `SET ${MOVE_TO_DUE_INDEX} REMOVE ${E.leaseOwner}, ${E.leaseUntil}`
              : `REMOVE gsi2pk, gsi2sk, ${E.leaseOwner}, ${E.leaseUntil}`,
            ConditionExpression: `${E.leaseOwner} = :owner AND ${version === undefined ? `attribute_not_exists(${E.dueVersion})` : `${E.dueVersion} = :version`}`,
            ExpressionAttributeValues: {
              ':owner': owner,
              ...(version === undefined ? {} : { ':version': version }),
              ...(due ? { ':pk': due.gsi2pk, ':sk': due.gsi2sk } : {}),
            },
          }),
        ),
      );
      return;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }
}
