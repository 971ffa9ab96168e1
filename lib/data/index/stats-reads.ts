import { addDecimal } from '#lib/decimal.ts';
import { batchGetAll, queryAll, tableName } from '../store/client.ts';
import { ATTR } from '../store/items.ts';
import type { Index } from './items.ts';
import { statsAttribute } from './stats-cells.ts';

/** Reads of an index's counts: its stats cells (dimension counts, declared counters such as an agent's open work). */
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
