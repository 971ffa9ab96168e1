import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { addDecimal } from '#lib/decimal.ts';
import { batchDeleteAll, batchPutAll, queryAll, scanAll, tableName } from '../client.ts';
import { ATTR, type ItemKey, keyString } from '../items.ts';
import { type EntityItems, entityItems, type Index } from './items.ts';

/**
 * Rebuilds an account's index of an entity from its entities: every posting, term, counter, block and the
 * stats item become exactly what creating the entities as they are now would have written, and index items no
 * entity accounts for are deleted. For tables written before an index existed (the queues, the blocks) and for
 * repairing drift. It is a maintenance step, not a concurrent one: the account must take no writes of the
 * entity while it runs (docs/data-model.md, "Reindex").
 */
export async function rebuildIndex<E>(
  index: Index<E>,
  accountId: string,
  entities: E[],
): Promise<{ written: number; removed: number }> {
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
  for (const item of [...totals.counterItems(), ...totals.blockItems()]) desired.set(keyString(item), item);

  const stale = (await indexKeysOf(index, accountId)).filter((key) => !desired.has(keyString(key)));
  await batchDeleteAll(stale);
  await batchPutAll([totals.statsItem(), ...desired.values()]);
  return { written: desired.size + 1, removed: stale.length };
}

/**
 * What the commits of many entities add up to in their shared index items: each counter's count, each block's
 * packed keys and the stats item's counts, as whole items to put. The reindex and the benchmark's bulk loader
 * write an entity's own items as entityItems gives them, and these totals once.
 */
export class IndexTotals<E> {
  private readonly counters = new Map<string, { key: ItemKey; n: number }>();
  private readonly blocks = new Map<string, { key: ItemKey; packed: Set<string> }>();
  private readonly stats = new Map<string, string>();

  constructor(
    private readonly index: Index<E>,
    private readonly accountId: string,
  ) {}

  add(items: EntityItems): void {
    for (const { counterKey: key } of items.unbounded) {
      const entry = this.counters.get(keyString(key)) ?? { key, n: 0 };
      this.counters.set(keyString(key), { key, n: entry.n + 1 });
    }
    for (const { key, packed } of items.blocks) {
      const entry = this.blocks.get(keyString(key)) ?? { key, packed: new Set<string>() };
      this.blocks.set(keyString(key), { key, packed: entry.packed.add(packed) });
    }
    for (const [attribute, amount] of items.statsAdds) {
      this.stats.set(attribute, addDecimal(this.stats.get(attribute) ?? '0', amount));
    }
  }

  statsItem(): Record<string, unknown> {
    const sums = [...this.stats].map(([attribute, sum]) => [attribute, NumberValue.from(sum)]);
    return { ...this.index.keys.stats(this.accountId), ...Object.fromEntries(sums) };
  }

  counterItems(): Record<string, unknown>[] {
    return [...this.counters.values()].map(({ key, n }) => ({ ...key, [ATTR.count]: n }));
  }

  /** Every block, or those of these keys (keyString of a block's key). */
  blockItems(only?: Set<string>): Record<string, unknown>[] {
    return [...this.blocks]
      .filter(([k]) => only === undefined || only.has(k))
      .map(([, { key, packed }]) => ({ ...key, [ATTR.blockKeys]: packed }));
  }
}

/**
 * The keys of every index item of the account: its terms partition (one Query), and its postings, counters
 * and blocks, which live in a partition per dimension and so are found by one Scan of the table.
 */
async function indexKeysOf<E>(index: Index<E>, accountId: string): Promise<{ pk: string; sk: string }[]> {
  const { keys } = index;
  const [terms, dimensions] = await Promise.all([
    queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.termsPartition(accountId) },
      ProjectionExpression: 'pk, sk',
      ConsistentRead: true,
    }),
    scanAll({
      TableName: tableName(),
      FilterExpression: 'begins_with(pk, :postings) OR begins_with(pk, :blocks)',
      ExpressionAttributeValues: {
        ':postings': keys.postingPartition(accountId, ''),
        ':blocks': keys.blockPartition(accountId, ''),
      },
      ProjectionExpression: 'pk, sk',
      ConsistentRead: true,
    }),
  ]);
  return [...terms, ...dimensions].map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
}
