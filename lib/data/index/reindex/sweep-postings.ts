import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { batchDeleteAll, dynamo, tableName } from '../../store/client.ts';
import { ATTR } from '../../store/items.ts';
import type { IndexDeclaration } from '../declaration.ts';
import { hasPostings } from '../dimensions.ts';
import { packOrderKey } from '../order-key.ts';
import { stillPending } from '../pending.ts';
import { pagesOf } from './pages.ts';
import type { DimensionProgress, ReindexRun } from './run.ts';

/**
 * The sweep's first part of a dimension (sweep.ts): its postings read page by page and each checked against its
 * entity (one BatchGet a page); those of entities absent or no longer in the dimension are deleted, the rest
 * counted (every one, in a dimension that keeps none). Answers the packed keys of the entities it lists when it read them all, from the first, in at most a
 * page (its blocks are then checked against them: sweep-blocks.ts); else undefined.
 */
export async function sweepPostings<E>(
  run: ReindexRun<E>,
  dimension: DimensionProgress,
): Promise<Set<string> | undefined> {
  const { index, accountId, progress, pageSize } = run;
  const { name } = dimension;
  // A dimension a queue lists keeps no postings (dimensions.ts, hasPostings): an earlier release's are all stale.
  const keeps = hasPostings(index.declaration as IndexDeclaration<E, unknown>, name);
  let listed = dimension.after === undefined && keeps ? new Set<string>() : undefined;
  const pages = pagesOf(index.keys.postingPartition(accountId, name), () => dimension.after, {
    limit: pageSize,
    projection: 'pk, sk, #n, #u',
    names: { '#n': ATTR.count, '#u': ATTR.unconfirmed },
  });
  for await (const { items, more } of pages) {
    const found = items.map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
    for (const item of items.filter((item) => index.keys.isCounterSort(item.sk as string)))
      dimension.counter = { ...dimension.counter, [item.sk as string]: Number(item[ATTR.count] ?? 0) };
    const postings = found.filter((k) => !index.keys.isCounterSort(k.sk));
    // A create's marked posting whose pending item is there: its commit may yet land (pending.ts). Read before
    // the entities: a create landing between the two reads is found by the second (the other way round, it was in
    // neither, and its posting was deleted).
    const underWay = await stillPending(
      index,
      accountId,
      items.filter((item) => !index.keys.isCounterSort(item.sk as string)),
    );
    const entities = keeps ? await run.entitiesAt(postings.map((p) => p.sk)) : new Map<string, E>();
    const held = (p: { sk: string }) => keeps && run.holds(name, entities.get(p.sk));
    const stale = postings.filter((p) => !held(p) && !(keeps && underWay.has(p.sk)));
    if (listed && listed.size + postings.length <= pageSize && !more) {
      for (const p of postings) if (run.holds(name, entities.get(p.sk))) listed.add(packOrderKey(p.sk));
    } else listed = undefined;
    await batchDeleteAll(stale);
    progress.removed += stale.length;
    dimension.count += postings.filter(held).length;
    dimension.after = found[found.length - 1]?.sk;
    await run.save();
  }
  return listed;
}

/**
 * The count of an unbounded dimension is its counter, put in shard 0 with its other shards (and an earlier
 * release's one `#COUNT`) deleted in the same transaction: a reader sums the same total before and after. A
 * bounded one is counted in the stats cells: a counter there is deleted.
 */
export async function foldCounter<E>(run: ReindexRun<E>, dimension: DimensionProgress): Promise<void> {
  const { index, accountId, progress } = run;
  const { name } = dimension;
  const counterKey = index.keys.counter(accountId, name);
  const shards = Object.entries(dimension.counter ?? {});
  const others = shards.filter(([sk]) => sk !== counterKey.sk).map(([sk]) => sk);
  if (!index.isStatsDimension(name) && dimension.count > 0) {
    if (others.length > 0 || dimension.counter?.[counterKey.sk] !== dimension.count) {
      await dynamo.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName: tableName(), Item: { ...counterKey, [ATTR.count]: dimension.count } } },
            ...others.map((sk) => ({ Delete: { TableName: tableName(), Key: { pk: counterKey.pk, sk } } })),
          ],
        }),
      );
      progress.written += 1;
      progress.folded = (progress.folded ?? 0) + others.length;
    }
  } else if (shards.length > 0) {
    await batchDeleteAll(shards.map(([sk]) => ({ pk: counterKey.pk, sk })));
    progress.folded = (progress.folded ?? 0) + shards.length;
  }
}
