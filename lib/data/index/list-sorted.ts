import { queryAll, tableName } from '../store/client.ts';
import { ReadBudgetExceeded } from '../store/errors.ts';
import { ATTR } from '../store/items.ts';
import { ALL } from './declaration.ts';
import { dimensionName } from './dimensions.ts';
import { intersectKeys } from './intersection.ts';
import type { Index } from './items.ts';
import type { PageQuery } from './list.ts';
import { unpackOrderKey } from './order-key.ts';
import { queryPostings } from './order-key-reads.ts';
import { getByOrderKeys } from './reads.ts';
import { getDimensionCounts } from './stats-reads.ts';

/**
 * The most entities a sorted list reads to order a filter's matches itself (below), when no bounded dimension it
 * names has a sorted partition small enough to read instead.
 */
const SORTED_ENTITY_READS = 1_000;

/**
 * One page in a declared order (IndexDeclaration.sorts, e.g. `due`), and the exact total:
 * - no filter, or one bounded dimension: count ‖ that dimension's sorted postings up to the page (ascending), then
 *   the page's entities: O(per_page), as the newest-first list;
 * - any other shape: its matching keys as the newest-first list finds them (its own cost), then their order: from
 *   the smallest sorted partition among the bounded dimensions the filter names (a queue's parts too), read whole
 *   and kept to the matches, when it holds no more than max(matches, SORTED_ENTITY_READS) keys; else from the
 *   matching entities themselves (at most SORTED_ENTITY_READS of them; more: ReadBudgetExceeded). Only the page's
 *   entities are returned.
 * Index keys read are bounded by `budget` (list.ts, listReadBudget).
 */
export async function findSortedPage<E, F>(
  index: Index<E, F>,
  accountId: string,
  q: PageQuery<F>,
  dims: string[],
  sort: string,
  budget: number,
): Promise<{ total: number; entities: E[] }> {
  const ix = index as Index<E>;
  const sortValue = index.declaration.sorts?.[sort];
  if (!sortValue) throw new Error(`${index.declaration.entity}: no sort ${sort}`);
  const { words, offset, limit } = q;
  const single = dims[0];
  if (
    words.length === 0 &&
    ((dims.length === 0 && ix.isSortedDimension(ALL, sort)) ||
      (dims.length === 1 && single && ix.isSortedDimension(single, sort)))
  ) {
    const dim = single ?? ALL;
    if (offset + limit > budget) throw new ReadBudgetExceeded('page');
    const [counts, keys] = await Promise.all([
      getDimensionCounts(ix, accountId, [dim]),
      querySorted(ix, accountId, sort, dim, offset + limit),
    ]);
    return {
      total: counts[dim] ?? 0,
      entities: await getByOrderKeys(ix, accountId, keys.slice(offset, offset + limit)),
    };
  }
  // Every match, as order keys.
  let matches: string[];
  if (words.length === 0 && dims.length === 1 && single) {
    const counts = await getDimensionCounts(ix, accountId, [
      ...new Set([single, ...ix.postingSources(accountId, single)]),
    ]);
    const total = counts[single] ?? 0;
    if (total > budget) throw new ReadBudgetExceeded('page');
    matches = await queryPostings(ix, accountId, single, total, budget, counts);
  } else {
    matches = (await intersectKeys(ix, accountId, dims, words, budget)).map(unpackOrderKey);
  }
  const total = matches.length;
  if (total <= offset) return { total, entities: [] };
  const wanted = index.declaration.filter(q.filter);
  const bounded = Object.entries(wanted).flatMap(([name, values]) =>
    values.map((v) => dimensionName(name, v)).filter((d) => ix.isSortedDimension(d, sort)),
  );
  const counts = bounded.length > 0 ? await getDimensionCounts(ix, accountId, bounded) : {};
  const source = bounded.sort((a, b) => (counts[a] ?? 0) - (counts[b] ?? 0))[0];
  const sourceSize = source ? (counts[source] ?? 0) : Number.POSITIVE_INFINITY;
  if (source && sourceSize <= budget && sourceSize <= Math.max(total, SORTED_ENTITY_READS)) {
    const matching = new Set(matches);
    const ordered = (await querySorted(ix, accountId, sort, source, sourceSize)).filter((k) =>
      matching.has(k),
    );
    return { total, entities: await getByOrderKeys(ix, accountId, ordered.slice(offset, offset + limit)) };
  }
  if (total > SORTED_ENTITY_READS) throw new ReadBudgetExceeded('filters');
  const entities = await getByOrderKeys(ix, accountId, matches);
  const keyed = entities.map((e) => ({ e, value: sortValue(e), key: ix.orderKeyOf(e) }));
  keyed.sort((a, b) =>
    a.value < b.value ? -1 : a.value > b.value ? 1 : a.key < b.key ? 1 : a.key > b.key ? -1 : 0,
  );
  return { total, entities: keyed.slice(offset, offset + limit).map((k) => k.e) };
}

/** The order keys of a sorted partition, ascending (its sort value, then newest first), at most `limit`. */
async function querySorted<E>(
  ix: Index<E>,
  accountId: string,
  sort: string,
  dim: string,
  limit: number,
): Promise<string[]> {
  if (limit <= 0) return [];
  for (let want = limit; ; ) {
    const items = await queryAll(
      {
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': ix.keys.sortedPartition(accountId, sort, dim) },
        ProjectionExpression: 'sk, #u',
        ExpressionAttributeNames: { '#u': ATTR.unconfirmed },
        ConsistentRead: true,
      },
      want,
    );
    // A posting put before its commit (marked) counts once its entity holds it: its dimension and sort value.
    const marked = items.filter((item) => ATTR.unconfirmed in item).map((item) => String(item.sk));
    const live = new Set<string>();
    if (marked.length > 0) {
      const entities = await getByOrderKeys(ix, accountId, marked.map(ix.keys.orderKeyOfSorted));
      for (const e of entities) {
        if (!ix.dimensionsOf(accountId, e).includes(dim)) continue;
        const value = ix.declaration.sorts?.[sort]?.(e);
        if (value !== undefined) live.add(ix.keys.sorted(accountId, sort, dim, value, ix.orderKeyOf(e)).sk);
      }
    }
    const keys = items
      .filter((item) => !(ATTR.unconfirmed in item) || live.has(String(item.sk)))
      .map((item) => ix.keys.orderKeyOfSorted(String(item.sk)));
    if (keys.length >= limit || items.length < want) return keys.slice(0, limit);
    // Postings of commits that never landed took places: read as many further as were dropped.
    want = limit + (items.length - keys.length);
  }
}
