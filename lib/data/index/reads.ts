import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { addDecimal } from '#lib/decimal.ts';
import { parseTermKey } from '../keys.ts';
import { batchGetAll, dynamo, getItem, queryAll, tableName } from '../store/client.ts';
import { ATTR, entityOf, type Versioned } from '../store/items.ts';
import type { Index } from './items.ts';
import { orderKeyOfUuid } from './order-key.ts';
import { statsAttribute } from './stats-cells.ts';

/** Reads of indexed entities: by key, by uuid and number, newest first, and their counters. */

/** The stats cells summed: each bounded dimension's count, and each declared counter's values. */
export interface Stats {
  counts: Record<string, number>;
  counters: Record<string, Record<string, number>>;
}

/**
 * Every stats cell of the account (or of these families), summed over their shards: one Query per family, all
 * in parallel (one round trip). The `counts` family is at most COUNTER_SHARDS items of a few attributes; an
 * agent family an item per agent (about 85 bytes: 1,000 agents, ~21 read units).
 */
export async function getStats<E>(index: Index<E>, accountId: string, families?: string[]): Promise<Stats> {
  const wanted = index.statsFamilies.filter((f) => families === undefined || families.includes(f.family));
  const items = await Promise.all(
    wanted.map((f) =>
      queryAll({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': index.keys.statsPartition(accountId, f.family) },
        ConsistentRead: true,
      }),
    ),
  );
  return statsOf(items.flat());
}

/** Attributes summed over items (exact decimals: an amount's shards add up without binary rounding). */
function statsOf(items: Record<string, unknown>[]): Stats {
  const sums = new Map<string, string>();
  for (const item of items) {
    for (const [attribute, value] of Object.entries(item)) {
      if (!statsAttribute.parse(attribute)) continue;
      sums.set(attribute, addDecimal(sums.get(attribute) ?? '0', value as number));
    }
  }
  const stats: Stats = { counts: {}, counters: {} };
  for (const [attribute, sum] of sums) {
    const counted = statsAttribute.parse(attribute);
    if (!counted) continue;
    if ('dim' in counted) {
      stats.counts[counted.dim] = Number(sum);
    } else {
      const counter = stats.counters[counted.counter] ?? {};
      counter[counted.value] = Number(sum);
      stats.counters[counted.counter] = counter;
    }
  }
  return stats;
}

/**
 * Exact counts of any dimensions, each the sum of its cell's shards (or its counter's, for an unbounded one):
 * one Query per cell or counter, all in parallel (one round trip), each a few small items (1 read unit).
 */
export async function getDimensionCounts<E>(
  index: Index<E>,
  accountId: string,
  dimensions: string[],
): Promise<Record<string, number>> {
  const { keys } = index;
  const unique = [...new Set(dimensions)];
  const cells = new Map<string, { family: string; value: string; sharded: boolean }>();
  for (const d of unique.filter((d) => index.isStatsDimension(d))) {
    const { family, value } = index.statsCellOf(statsAttribute.count(d));
    cells.set(`${family.family} ${value}`, { family: family.family, value, sharded: family.sharded });
  }
  const [cellItems, counterSums] = await Promise.all([
    Promise.all([...cells.values()].map((cell) => readCell(index, accountId, cell))),
    Promise.all(
      unique
        .filter((d) => !index.isStatsDimension(d))
        .map(async (d) => {
          const shards = await queryAll({
            TableName: tableName(),
            KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
            ExpressionAttributeValues: {
              ':pk': keys.postingPartition(accountId, d),
              ':from': keys.counterRange.from,
              ':to': keys.counterRange.to,
            },
            ConsistentRead: true,
          });
          return [d, shards.reduce((n, item) => n + Number(item[ATTR.count] ?? 0), 0)] as const;
        }),
    ),
  ]);
  const stats = statsOf(cellItems.flat());
  const counts: Record<string, number> = {};
  for (const d of unique) if (index.isStatsDimension(d)) counts[d] = stats.counts[d] ?? 0;
  for (const [d, n] of counterSums) counts[d] = n;
  return counts;
}

/**
 * One stats cell summed (its shards, or its one item): one Query of a few small items. Least-busy's pick after a
 * lost race reads only the agent it lost on, not every agent's cell again (lib/tickets/create-ticket.ts).
 */
export async function getStatsCell<E>(
  index: Index<E>,
  accountId: string,
  family: string,
  value: string,
): Promise<Stats> {
  const declared = index.statsFamilies.find((f) => f.family === family);
  if (!declared) throw new Error(`no stats family ${family}`);
  return statsOf(await readCell(index, accountId, { family, value, sharded: declared.sharded }));
}

/**
 * Several cells of an unsharded family (agents' cells of a page of agents), summed together: one BatchGetItem of
 * their keys, so the read is the page's size, not the family's (a Query of the family reads every agent's).
 */
export async function getStatsCells<E>(
  index: Index<E>,
  accountId: string,
  family: string,
  values: string[],
): Promise<Stats> {
  const declared = index.statsFamilies.find((f) => f.family === family);
  if (!declared || declared.sharded) throw new Error(`no unsharded stats family ${family}`);
  if (values.length === 0) return statsOf([]);
  return statsOf(
    await batchGetAll(values.map((value) => index.keys.statsCell(accountId, family, value, undefined))),
  );
}

/** A stats cell's items: its shards (a sharded family), or its one item. */
export async function readCell<E>(
  index: Index<E>,
  accountId: string,
  cell: { family: string; value: string; sharded: boolean },
): Promise<Record<string, unknown>[]> {
  const pk = index.keys.statsPartition(accountId, cell.family);
  // Queried even when unsharded (its one item by its key): a list reads with Query and BatchGetItem only.
  const range = cell.sharded ? index.keys.statsCellRange(cell.value) : { from: cell.value, to: cell.value };
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: { ':pk': pk, ':from': range.from, ':to': range.to },
    ConsistentRead: true,
  });
  if (!cell.sharded) return items;
  // The range of `5` also holds a value `5#x`'s shards: only the cell's own count.
  return items.filter((item) => index.keys.statsCellOf(item.sk as string, true).value === cell.value);
}

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
