import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { batchDeleteAll, batchPutAll, dynamo, queryAll, tableName } from '../../store/client.ts';
import { ATTR } from '../../store/items.ts';
import type { StatsFamily } from '../declaration.ts';
import { IndexTotals } from '../totals.ts';
import type { ReindexRun } from './run.ts';

/**
 * The reindex's second phase (account.ts): each family of stats cells (a partition each, Queried) is set to the
 * sums the build kept: a cell's totals put in one item (a sharded cell's in shard 0) and its other shards deleted
 * in the same transaction, so a reader sums the same total before and after; cells no entity counts in are
 * deleted. A closed shard (closed-cells.ts: a deleted team's) is never deleted: it is put again with its mark and
 * no count (shard 0 with the cell's totals and its mark), so a closed cell stays closed.
 */
export async function setStats<E>(run: ReindexRun<E>): Promise<void> {
  const { index, accountId, progress } = run;
  const totals = new IndexTotals(index, accountId, progress.stats);
  const families = index.statsFamilies.filter(
    (f) => progress.after === undefined || f.family > progress.after,
  );
  for (const family of [...families].sort((a, b) => a.family.localeCompare(b.family))) {
    await setStatsFamily(run, family, totals);
    progress.after = family.family;
    await run.save();
  }
}

/**
 * One family of stats cells set to the sums: the sort keys of its partition read (one Query, paged: a cell's
 * shards need not be side by side), then each counted cell put with its other shards deleted in one transaction
 * (at most COUNTER_SHARDS actions), and every cell no entity counts in deleted. What it holds is bounded by the
 * family's cells (times COUNTER_SHARDS), as the sums in the progress item are, never by the entities.
 */
async function setStatsFamily<E>(
  run: ReindexRun<E>,
  family: StatsFamily,
  totals: IndexTotals<E>,
): Promise<void> {
  const { index, accountId, progress } = run;
  const { keys } = index;
  const wanted = new Map(
    totals
      .statsItems()
      .filter((item) => item.pk === keys.statsPartition(accountId, family.family))
      .map((item) => [item.sk as string, item]),
  );
  /** The items found of each counted cell other than the one to put (its shards to delete), by cell. */
  const extra = new Map<string, string[]>();
  const found = new Set<string>();
  const stale: { pk: string; sk: string }[] = [];
  /** Closed shards (their cells' `closed` marks), put again with the mark only, never deleted. */
  const closed = new Set<string>();
  const pk = keys.statsPartition(accountId, family.family);
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ExpressionAttributeNames: { '#closed': ATTR.closed },
    ProjectionExpression: 'pk, sk, #closed',
    ConsistentRead: true,
  });
  for (const item of items) {
    const sk = item.sk as string;
    found.add(sk);
    if (item[ATTR.closed] === true) closed.add(sk);
    if (wanted.has(sk)) continue;
    const { value } = keys.statsCellOf(sk, family.sharded);
    const target = keys.statsCell(accountId, family.family, value, family.sharded ? 0 : undefined).sk;
    if (wanted.has(target)) extra.set(target, [...(extra.get(target) ?? []), sk]);
    else if (!closed.has(sk)) stale.push({ pk, sk });
  }
  const mark = (sk: string) => (closed.has(sk) ? { [ATTR.closed]: true } : {});
  for (const [sk, item] of wanted) {
    const others = extra.get(sk) ?? [];
    await dynamo.send(
      new TransactWriteCommand({
        TransactItems: [
          // The cell's totals carry its mark if any shard of it had one.
          {
            Put: {
              TableName: tableName(),
              Item: { ...item, ...mark([sk, ...others].find((o) => closed.has(o)) ?? sk) },
            },
          },
          ...others.map((other) =>
            closed.has(other)
              ? { Put: { TableName: tableName(), Item: { pk, sk: other, ...mark(other) } } }
              : { Delete: { TableName: tableName(), Key: { pk, sk: other } } },
          ),
        ],
      }),
    );
    progress.written += 1;
    progress.folded = (progress.folded ?? 0) + others.length;
  }
  const counted = new Set([...wanted.keys(), ...[...extra.values()].flat()]);
  await batchPutAll([...closed].filter((sk) => !counted.has(sk)).map((sk) => ({ pk, sk, ...mark(sk) })));
  await batchDeleteAll(stale);
  progress.folded = (progress.folded ?? 0) + stale.length;
}
