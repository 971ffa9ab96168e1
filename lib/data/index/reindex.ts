import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { addDecimal } from '#lib/decimal.ts';
import { batchDeleteAll, batchPutAll, queryAll, scanAll, tableName } from '../client.ts';
import { ATTR, type ItemKey, keyString } from '../items.ts';
import { type EntityItems, entityItems, type Index } from './items.ts';

/**
 * Rebuilds an account's index of an entity from its entities: every posting, term, counter, block and stats
 * cell become exactly what creating the entities as they are now would have written, and index items no
 * entity accounts for are deleted. For tables written before an index existed (the queues, the blocks) and for
 * repairing drift. It is a maintenance step, not a concurrent one: the account must take no writes of the
 * entity while it runs (docs/data-model.md, "Reindex").
 */
export async function rebuildIndex<E>(
  index: Index<E>,
  accountId: string,
  entities: E[],
): Promise<{ written: number; removed: number; folded: number; emptied: number }> {
  const totals = new IndexTotals(index, accountId);
  const desired = new Map<string, Record<string, unknown>>();
  for (const entity of entities) {
    const items = entityItems(index, accountId, entity);
    for (const item of [
      ...items.boundedPostings,
      ...items.unbounded.map((u) => u.posting),
      ...(items.numberTerm ? [items.numberTerm] : []),
      ...items.prefixTerms,
    ]) {
      desired.set(keyString(item), item);
    }
    totals.add(items);
  }
  for (const item of [...totals.statsItems(), ...totals.counterItems(), ...totals.blockItems()])
    desired.set(keyString(item), item);

  const stale = (await indexKeysOf(index, accountId)).filter((key) => !desired.has(keyString(key)));
  await batchDeleteAll(stale.map(({ pk, sk }) => ({ pk, sk })));
  await batchPutAll([...desired.values()]);
  // Counter shards and stats cells folded into one item each (and the one stats item of earlier releases), and
  // blocks their updates emptied, are counted apart from stale entries: entries no entity accounts for.
  const isCount = (key: { pk: string; sk: string }) =>
    index.keys.isCounterSort(key.sk) || key.pk.startsWith(index.keys.legacyStats(accountId).pk);
  const folded = stale.filter(isCount).length;
  const emptied = stale.filter((key) => key.empty).length;
  return { written: desired.size, removed: stale.length - folded - emptied, folded, emptied };
}

/**
 * What the commits of many entities add up to in their shared index items: each counter's count, each block's
 * packed keys and each stats cell's counts and sums, as whole items to put (a sharded counter's total in one
 * shard). The reindex and the benchmark's bulk loader
 * write an entity's own items as entityItems gives them, and these totals once.
 */
export class IndexTotals<E> {
  private readonly counters = new Map<string, { dim: string; n: number }>();
  private readonly blocks = new Map<string, { key: ItemKey; packed: Set<string> }>();
  private readonly stats = new Map<string, string>();

  constructor(
    private readonly index: Index<E>,
    private readonly accountId: string,
  ) {}

  add(items: EntityItems): void {
    for (const { dim } of items.unbounded) {
      this.counters.set(dim, { dim, n: (this.counters.get(dim)?.n ?? 0) + 1 });
    }
    for (const { key, packed } of items.blocks) {
      const entry = this.blocks.get(keyString(key)) ?? { key, packed: new Set<string>() };
      this.blocks.set(keyString(key), { key, packed: entry.packed.add(packed) });
    }
    for (const [attribute, amount] of items.statsAdds) {
      this.stats.set(attribute, addDecimal(this.stats.get(attribute) ?? '0', amount));
    }
  }

  /**
   * The stats cells: each cell's totals in one item (a sharded cell's in its shard 0, the other shards left
   * to be deleted: a total is the sum of whatever shards exist).
   */
  statsItems(): Record<string, unknown>[] {
    const cells = new Map<string, Record<string, unknown>>();
    for (const [attribute, sum] of this.stats) {
      const { family, value } = this.index.statsCellOf(attribute);
      const key = this.index.keys.statsCell(
        this.accountId,
        family.family,
        value,
        family.sharded ? 0 : undefined,
      );
      const item = cells.get(keyString(key)) ?? { ...key };
      item[attribute] = NumberValue.from(sum);
      cells.set(keyString(key), item);
    }
    return [...cells.values()];
  }

  /** Each unbounded dimension's counter, its total in shard 0. */
  counterItems(): Record<string, unknown>[] {
    return [...this.counters.values()].map(({ dim, n }) => ({
      ...this.index.keys.counter(this.accountId, dim, 0),
      [ATTR.count]: n,
    }));
  }

  /** Every block, or those of these keys (keyString of a block's key). */
  blockItems(only?: Set<string>): Record<string, unknown>[] {
    return [...this.blocks]
      .filter(([k]) => only === undefined || only.has(k))
      .map(([, { key, packed }]) => ({ ...key, [ATTR.blockKeys]: packed }));
  }
}

/**
 * The keys of every index item of the account: its terms partition and its stats cells' partitions (with the
 * one stats item of earlier releases: a Query each), and its postings, counters and blocks, which live in a
 * partition per dimension and so are found by one Scan of the table.
 */
async function indexKeysOf<E>(
  index: Index<E>,
  accountId: string,
): Promise<{ pk: string; sk: string; empty: boolean }[]> {
  const { keys } = index;
  const partitions = [
    keys.termsPartition(accountId),
    keys.legacyStats(accountId).pk,
    ...index.statsFamilies.map((f) => keys.statsPartition(accountId, f.family)),
  ];
  const [queried, dimensions] = await Promise.all([
    Promise.all(
      partitions.map((pk) =>
        queryAll({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ProjectionExpression: 'pk, sk',
          ConsistentRead: true,
        }),
      ),
    ),
    scanAll({
      TableName: tableName(),
      FilterExpression: 'begins_with(pk, :postings) OR begins_with(pk, :blocks)',
      ExpressionAttributeValues: {
        ':postings': keys.postingPartition(accountId, ''),
        ':blocks': keys.blockPartition(accountId, ''),
      },
      ProjectionExpression: 'pk, sk, #k, #u',
      ExpressionAttributeNames: { '#k': ATTR.blockKeys, '#u': ATTR.unconfirmed },
      ConsistentRead: true,
    }),
  ]);
  const blocks = keys.blockPartition(accountId, '');
  return [...queried.flat(), ...dimensions].map((item) => ({
    pk: item.pk as string,
    sk: item.sk as string,
    // A block every key of which its updates took out.
    empty: (item.pk as string).startsWith(blocks) && !(ATTR.blockKeys in item) && !(ATTR.unconfirmed in item),
  }));
}
