import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { batchGetAll, dynamo, getItem, queryAll, tableName } from '../client.ts';
import { ATTR, entityOf, keyString, type Versioned } from '../items.ts';
import { parseTermKey } from '../keys.ts';
import { statsAttribute } from './declaration.ts';
import type { Index } from './items.ts';
import { orderKeyOfUuid } from './order-key.ts';

/** Reads of indexed entities: by key, by uuid and number, newest first, and their counters. */

/** The stats item: each bounded dimension's count, and each declared counter's values. */
export interface Stats {
  counts: Record<string, number>;
  counters: Record<string, Record<string, number>>;
}

export async function getStats<E>(index: Index<E>, accountId: string): Promise<Stats> {
  return statsOf(await getItem(index.keys.stats(accountId)));
}

function statsOf(item: Record<string, unknown> | undefined): Stats {
  const stats: Stats = { counts: {}, counters: {} };
  for (const [attribute, value] of Object.entries(item ?? {})) {
    const counted = statsAttribute.parse(attribute);
    if (!counted) continue;
    if ('dim' in counted) {
      stats.counts[counted.dim] = value as number;
    } else {
      const counter = stats.counters[counted.counter] ?? {};
      counter[counted.value] = value as number;
      stats.counters[counted.counter] = counter;
    }
  }
  return stats;
}

/** Exact counts of any dimensions: the stats item and the counters of unbounded ones, in one BatchGet. */
export async function getDimensionCounts<E>(
  index: Index<E>,
  accountId: string,
  dimensions: string[],
): Promise<Record<string, number>> {
  const { keys } = index;
  const unbounded = [...new Set(dimensions.filter((d) => !index.isStatsDimension(d)))];
  const statsKey = keys.stats(accountId);
  const items = await batchGetAll([statsKey, ...unbounded.map((d) => keys.counter(accountId, d))]);
  const byKey = new Map(items.map((item) => [keyString(item), item]));
  const stats = statsOf(byKey.get(keyString(statsKey)));
  const counts: Record<string, number> = {};
  for (const d of dimensions) {
    if (index.isStatsDimension(d)) counts[d] = stats.counts[d] ?? 0;
  }
  for (const d of unbounded) {
    counts[d] = (byKey.get(keyString(keys.counter(accountId, d)))?.[ATTR.count] as number | undefined) ?? 0;
  }
  return counts;
}

/** The newest `limit` entities of the account, straight from their own partition (order key descending). */
export async function newest<E>(index: Index<E>, accountId: string, limit: number): Promise<E[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': index.keys.itemPartition(accountId) },
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  return (Items ?? []).map((item) => entityOf<E>(item));
}

/** Entities by order key, in the order asked (BatchGet in parallel chunks of 100, strongly consistent). */
export async function getByOrderKeys<E>(
  index: Index<E>,
  accountId: string,
  orderKeys: string[],
): Promise<E[]> {
  const items = await batchGetAll(orderKeys.map((k) => index.keys.item(accountId, k)));
  const byKey = new Map(items.map((item) => [item.sk as string, entityOf<E>(item)]));
  return orderKeys.map((k) => byKey.get(k)).filter((e): e is E => e !== undefined);
}

/** The entity a uuid names (its order key is inside it: one GetItem), or undefined. */
export async function getByUuid<E extends { uuid: string }>(
  index: Index<E>,
  accountId: string,
  uuid: string,
): Promise<Versioned<E> | undefined> {
  const orderKey = (index.declaration.keyOfUuid ?? orderKeyOfUuid)(uuid);
  const stored = orderKey ? await getStored(index, accountId, orderKey) : undefined;
  return stored?.entity.uuid === uuid ? stored : undefined;
}

/** The entity with this number (its number term gives the order key: one Query, then one GetItem). */
export async function getByNumber<E>(
  index: Index<E>,
  accountId: string,
  number: number,
): Promise<Versioned<E> | undefined> {
  const [term] = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: {
        ':pk': index.keys.termsPartition(accountId),
        ':prefix': index.keys.numberTermQuery(String(number)),
      },
      ProjectionExpression: 'sk',
      ConsistentRead: true,
    },
    1,
  );
  return term ? getStored(index, accountId, parseTermKey(term.sk as string).orderKey) : undefined;
}

/** An entity item as stored: the entity and its version (items from before versions existed are at 1). */
export function storedOf<E>(item: Record<string, unknown>): Versioned<E> {
  return { entity: entityOf<E>(item), version: Number(item[ATTR.version] ?? 1) };
}

export async function getStored<E>(
  index: Index<E>,
  accountId: string,
  orderKey: string,
): Promise<Versioned<E> | undefined> {
  const item = await getItem(index.keys.item(accountId, orderKey));
  return item ? storedOf<E>(item) : undefined;
}
