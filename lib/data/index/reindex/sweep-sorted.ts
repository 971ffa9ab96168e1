import { batchDeleteAll } from '../../store/client.ts';
import { ATTR } from '../../store/items.ts';
import { stillPending } from '../pending.ts';
import { pagesOf } from './pages.ts';
import type { DimensionProgress, ReindexRun } from './run.ts';

/**
 * The sweep's last part of a dimension (sweep.ts): its sorted postings (IndexDeclaration.sorts: in `all` and each
 * bounded dimension), page by page, each checked against its entity (one BatchGet a page): one whose entity is
 * gone, is no longer in the dimension, or has another sort value now (a due time since moved: the posting an
 * update's lost commit, or a hand, left) is deleted, unless a create put it before its commit and may still land
 * (pending.ts, stillPending). The build put every entity's own.
 */
export async function sweepSorted<E>(run: ReindexRun<E>, dimension: DimensionProgress): Promise<void> {
  const { index, accountId, progress } = run;
  const { keys } = index;
  const { name } = dimension;
  const sorts = Object.entries(index.declaration.sorts ?? {}).sort(([x], [y]) => x.localeCompare(y));
  for (const [sort, sortValue] of sorts) {
    // A dimension that keeps none of this sort (sweep.ts sweeps it only if an earlier release may have): all stale.
    const keeps = index.isSortedDimension(name, sort);
    if (dimension.sort !== undefined && sort < dimension.sort) continue;
    if (dimension.sort !== sort) Object.assign(dimension, { sort, after: undefined });
    const pages = pagesOf(keys.sortedPartition(accountId, sort, name), () => dimension.after, {
      limit: run.pageSize,
      projection: 'pk, sk, #u',
      names: { '#u': ATTR.unconfirmed },
    });
    for await (const { items } of pages) {
      const found = items.map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
      // The pending items before the entities: a create landing between the two reads is found by the second
      // (the other way round, it was in neither, and its posting was deleted).
      const underWay = keeps ? await stillPending(index, accountId, items) : new Set<string>();
      const entities = keeps
        ? await run.entitiesAt(found.map((p) => keys.orderKeyOfSorted(p.sk)))
        : new Map<string, E>();
      const stale = found.filter((p) => {
        const orderKey = keys.orderKeyOfSorted(p.sk);
        const entity = entities.get(orderKey);
        if (entity === undefined && underWay.has(p.sk)) return false;
        if (!keeps || entity === undefined || !run.holds(name, entity)) return true;
        return keys.sorted(accountId, sort, name, sortValue(entity), orderKey).sk !== p.sk;
      });
      await batchDeleteAll(stale);
      progress.removed += stale.length;
      dimension.after = found[found.length - 1]?.sk;
      await run.save();
    }
  }
}
