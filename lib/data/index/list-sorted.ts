import { queryAll, tableName } from '../store/client.ts';
import { ReadBudgetExceeded } from '../store/errors.ts';
import { ATTR } from '../store/items.ts';
import {
  besidePending,
  type CheckedPage,
  type DeferredMarks,
  markedKey,
  readCheckingMarks,
  unsureOf,
} from './confirmed.ts';
import { ALL } from './declaration.ts';
import { dimensionName } from './dimensions.ts';
import { intersectKeys } from './intersection.ts';
import type { Index } from './items.ts';
import type { PageQuery } from './list.ts';
import { confirmedKeys, confirmedPage, type ListOrder, NEWEST_FIRST } from './merged-reads.ts';
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
  // Marks of creates' items put before their commits are looked at beside the page's entities, as list.ts does.
  return readCheckingMarks((deferred) => sortedPage(index, accountId, q, dims, sort, budget, deferred));
}

async function sortedPage<E, F>(
  index: Index<E, F>,
  accountId: string,
  q: PageQuery<F>,
  dims: string[],
  sort: string,
  budget: number,
  deferred?: DeferredMarks,
): Promise<CheckedPage<E>> {
  const ix = index as Index<E>;
  const finish = besidePending(ix, accountId, deferred);
  const sortValue = index.declaration.sorts?.[sort];
  if (!sortValue) throw new Error(`${index.declaration.entity}: no sort ${sort}`);
  const { words, offset, limit } = q;
  const single = dims[0];
  const sources = dims.length <= 1 ? ix.sortedSources(accountId, single ?? ALL, sort) : [];
  if (words.length === 0 && sources.length > 0) {
    const dim = single ?? ALL;
    // Each of a merged dimension's sources may hold the whole page (queryPostings).
    if ((offset + limit) * sources.length > budget) throw new ReadBudgetExceeded('page');
    const read = () => querySorted(ix, accountId, sort, dim, offset + limit, deferred);
    const [counts, keys] = await Promise.all([getDimensionCounts(ix, accountId, [dim]), read()]);
    const total = counts[dim] ?? 0;
    if (total <= offset) return { page: { total, entities: [] }, recheck: false };
    const page = { keys, offset, limit, partitions: sources.length };
    return finish(total, confirmedPage(ix, accountId, page, read, sortedOrder(ix)));
  }
  // Every match, as order keys.
  let matches: string[];
  if (words.length === 0 && dims.length === 1 && single) {
    const sources = ix.postingSources(accountId, single);
    const counts = await getDimensionCounts(ix, accountId, [...new Set([single, ...sources])]);
    const total = counts[single] ?? 0;
    if (total > budget) throw new ReadBudgetExceeded('page');
    // Every match, so read twice where it is merged from several partitions (merged-reads.ts).
    const read = (slack?: number) =>
      queryPostings(ix, accountId, single, total, budget, { counts, slack }, deferred);
    matches = await confirmedKeys(
      sources.length,
      () => read(),
      NEWEST_FIRST,
      () => read(total),
    );
  } else {
    matches = (await intersectKeys(ix, accountId, dims, words, budget, deferred)).map(unpackOrderKey);
  }
  const total = matches.length;
  // A total counted from keys (some a create may have put before its commit) is checked as a page's is.
  if (total <= offset) return finish(total, Promise.resolve([]), matches);
  const wanted = index.declaration.filter(q.filter);
  const bounded = Object.entries(wanted).flatMap(([name, values]) =>
    values.map((v) => dimensionName(name, v)).filter((d) => ix.sortedSources(accountId, d, sort).length > 0),
  );
  const counts = bounded.length > 0 ? await getDimensionCounts(ix, accountId, bounded) : {};
  const source = bounded.sort((a, b) => (counts[a] ?? 0) - (counts[b] ?? 0))[0];
  const sourceSize = source ? (counts[source] ?? 0) : Number.POSITIVE_INFINITY;
  if (source && sourceSize <= budget && sourceSize <= Math.max(total, SORTED_ENTITY_READS)) {
    const matching = new Set(matches);
    const read = () => querySorted(ix, accountId, sort, source, sourceSize, deferred);
    const partitions = ix.sortedSources(accountId, source, sort).length;
    const sourceKeys = (await confirmedKeys(partitions, read, sortedOrder(ix))).map(ix.keys.orderKeyOfSorted);
    const ordered = sourceKeys.filter((k) => matching.has(k));
    // A create's sorted posting read as it is (its mark deferred) takes a place within the count read, a match's
    // maybe, whether or not the filter matches it: the keys read are looked at as well as the matches.
    return finish(total, getByOrderKeys(ix, accountId, ordered.slice(offset, offset + limit)), [
      ...matches,
      ...sourceKeys,
    ]);
  }
  if (total > SORTED_ENTITY_READS) throw new ReadBudgetExceeded('filters');
  const ordered = async () => {
    const entities = await getByOrderKeys(ix, accountId, matches);
    const keyed = entities.map((e) => ({ e, value: sortValue(e), key: ix.orderKeyOf(e) }));
    keyed.sort((a, b) =>
      a.value < b.value ? -1 : a.value > b.value ? 1 : a.key < b.key ? 1 : a.key > b.key ? -1 : 0,
    );
    return keyed.slice(offset, offset + limit).map((k) => k.e);
  };
  return finish(total, ordered(), matches);
}

/**
 * The sort keys of a dimension's sorted partitions (Index.sortedSources: its own, or its queue's, merged),
 * ascending (its sort value, then newest first), each entity once, at most `limit` (from each).
 */
async function querySorted<E>(
  ix: Index<E>,
  accountId: string,
  sort: string,
  dim: string,
  limit: number,
  deferred?: DeferredMarks,
): Promise<string[]> {
  const sources = ix.sortedSources(accountId, dim, sort);
  const lists = await Promise.all(
    sources.map((source) => sortedKeys(ix, accountId, sort, source, limit, deferred)),
  );
  return sortedOrder(ix).merge(lists).slice(0, limit);
}

/**
 * Sort keys ascending, each entity once (merged-reads.ts): a ticket whose due time moved while its partitions were
 * read may be in two places; the first is kept.
 */
const sortedOrder = <E>(ix: Index<E>): ListOrder => ({
  merge: (reads) => {
    const seen = new Set<string>();
    return [...new Set(reads.flat())].sort().filter((sk) => {
      const key = ix.keys.orderKeyOfSorted(sk);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  },
  orderKeyOf: (sk) => ix.keys.orderKeyOfSorted(sk),
});

/** The sort keys of one sorted partition, ascending, at most `limit`. */
async function sortedKeys<E>(
  ix: Index<E>,
  accountId: string,
  sort: string,
  dim: string,
  limit: number,
  deferred?: DeferredMarks,
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
    // A posting put before its commit (marked) counts once its create is known to have landed (pending.ts), or
    // once its entity holds it: its dimension and sort value.
    const unsure = await unsureOf(
      ix,
      accountId,
      items.map((item) => markedKey(ix.keys.orderKeyOfSorted(String(item.sk)), item)),
      deferred,
    );
    const marked = items
      .filter((item) => unsure(markedKey(ix.keys.orderKeyOfSorted(String(item.sk)), item)))
      .map((item) => String(item.sk));
    const live = new Set<string>();
    if (marked.length > 0) {
      const entities = await getByOrderKeys(ix, accountId, marked.map(ix.keys.orderKeyOfSorted));
      for (const e of entities) {
        if (!ix.dimensionsOf(accountId, e).includes(dim)) continue;
        const value = ix.declaration.sorts?.[sort]?.(e);
        if (value !== undefined) live.add(ix.keys.sorted(accountId, sort, dim, value, ix.orderKeyOf(e)).sk);
      }
    }
    const checked = new Set(marked);
    const keys = items
      .filter((item) => !checked.has(String(item.sk)) || live.has(String(item.sk)))
      .map((item) => String(item.sk));
    if (keys.length >= limit || items.length < want) return keys.slice(0, limit);
    // Postings of commits that never landed took places: read as many further as were dropped.
    want = limit + (items.length - keys.length);
  }
}
