import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { parseTermKey } from '../keys.ts';
import { batchGetAll, dynamo, getItem, queryAll, tableName } from '../store/client.ts';
import { ATTR, entityOf, keyString, type Versioned } from '../store/items.ts';
import type { Index } from './items.ts';
import { orderKeyOfUuid } from './order-key.ts';

/** Reads of indexed entities: by key, by uuid and number, newest first (their counts: stats-reads.ts). */

/**
 * The newest `limit` entities of the account, straight from their own partitions (order key descending): each
 * partition's newest share in parallel (an entity's partition follows from its number, so the newest are about
 * evenly spread), merged. A partition that gave its whole share and whose last entity is newer than the merge's
 * last may hold more of the newest: it is read on (another round trip, only then), so the page is exact.
 */
export async function newest<E>(index: Index<E>, accountId: string, limit: number): Promise<E[]> {
  const partitions = index.keys.itemPartitions(accountId);
  const share = partitions.length === 1 ? limit : Math.ceil(limit / partitions.length) + NEWEST_SLACK;
  const read = partitions.map(() => [] as Record<string, unknown>[]);
  let open = partitions.map((_, i) => i);
  let want = share;
  for (;;) {
    const pages = await Promise.all(
      open.map((i) => newestOf(partitions[i] as string, read[i]?.at(-1), want)),
    );
    for (const [n, i] of open.entries()) read[i]?.push(...(pages[n] ?? []));
    const merged = read
      .flat()
      .sort((a, b) => (String(a.sk) < String(b.sk) ? 1 : -1))
      .slice(0, limit);
    const last = merged.length === limit ? String(merged[limit - 1]?.sk) : undefined;
    // Read on where a partition filled its page and its oldest read is still newer than the merge's last (or the
    // merge is short of the page).
    open = open.filter(
      (i, n) => (pages[n]?.length ?? 0) >= want && (last === undefined || String(read[i]?.at(-1)?.sk) > last),
    );
    if (open.length === 0) return merged.map((item) => entityOf<E>(item));
    want = limit;
  }
}
/** Entities read from each partition beyond its even share of a newest-first page. */
const NEWEST_SLACK = 2;

async function newestOf(
  pk: string,
  after: Record<string, unknown> | undefined,
  limit: number,
): Promise<Record<string, unknown>[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: limit,
      ...(after ? { ExclusiveStartKey: { pk: after.pk, sk: after.sk } } : {}),
    }),
  );
  return Items ?? [];
}

/** Entities by order key, in the order asked (BatchGet in parallel chunks of 100, strongly consistent). */
export async function getByOrderKeys<E>(
  index: Index<E>,
  accountId: string,
  orderKeys: string[],
): Promise<E[]> {
  const stored = await getStoredMany(
    index,
    orderKeys.map((orderKey) => ({ accountId, orderKey })),
  );
  return stored.flatMap((s) => (s ? [s.entity] : []));
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
        ':pk': index.keys.numberTermPartition(accountId, number),
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

/**
 * The entities several order keys name, of any accounts (a runner's due window), as stored, in the order asked
 * (undefined where none): strongly consistent, one BatchGetItem a hundred.
 */
export async function getStoredMany<E>(
  index: Index<E>,
  refs: readonly { accountId: string; orderKey: string }[],
): Promise<(Versioned<E> | undefined)[]> {
  const keys = refs.map((ref) => index.keys.item(ref.accountId, ref.orderKey));
  // Each key once: a BatchGetItem naming a key twice is refused whole (a due entry seen at two places while it moves).
  const unique = [...new Map(keys.map((key) => [keyString(key), key])).values()];
  const items = unique.length > 0 ? await batchGetAll(unique) : [];
  const byKey = new Map(items.map((item) => [keyString(item), storedOf<E>(item)]));
  return keys.map((key) => byKey.get(keyString(key)));
}
