import { intEnv } from '#lib/config/env.ts';
import { ReadBudgetExceeded } from '../store/errors.ts';
import { besidePending, type CheckedPage, type DeferredMarks, readCheckingMarks } from './confirmed.ts';
import { ALL } from './declaration.ts';
import { filterDimensions } from './dimensions.ts';
import { intersectedPage } from './intersected-page.ts';
import { intersectKeys } from './intersection.ts';
import type { Index } from './items.ts';
import { findSortedPage } from './list-sorted.ts';
import { confirmedPage } from './merged-reads.ts';
import { unpackOrderKey } from './order-key.ts';
import { queryPostings, type SourceCaps } from './order-key-reads.ts';
import { newest } from './reads.ts';
import { getDimensionCounts } from './stats-reads.ts';

/** What a list asks for: filters, search words (every one must match), and the window of the page. */
export interface PageQuery<F> {
  filter: F;
  words: string[];
  offset: number;
  limit: number;
  /** A declared order (IndexDeclaration.sorts) instead of newest first. */
  sort?: string | undefined;
}

/**
 * The most index keys (postings, term keys) one list may read before it answers: sized in docs/decisions.md
 * ("Bounded work per list") so that every ordinary shape stays far within it and the largest still finishes
 * within the request's deadline. LIST_READ_BUDGET replaces it (tests lower it; read at each use).
 */
export const listReadBudget = () => intEnv('LIST_READ_BUDGET', DEFAULT_LIST_READ_BUDGET);
export const DEFAULT_LIST_READ_BUDGET = 100_000;

/**
 * One page of entities, newest first, and the exact total. Every filter is a dimension with a posting list and
 * an exact counter; queue parts named together are one queue dimension (docs/data-model.md, cost model):
 * - no filter, first page: count ‖ the newest entities from their own partition (1 round trip);
 * - one dimension (a single filter, or a queue): count ‖ that dimension's page of keys, then the page's entities
 *   (2 round trips, O(per_page) reads at any account size; a deep page also reads the skipped keys, tiny);
 * - several dimensions, or search: the counters (an empty dimension ends it), then every dimension's packed
 *   blocks and every word's term keys in parallel, intersected; only the page's entities are read. O(keys of
 *   the named dimensions and words) at about 16 bytes a key, never an entity that is not on the page
 *   (intersection.ts);
 * - a declared order (`sort`): list-sorted.ts.
 */
export async function findPage<E, F>(
  index: Index<E, F>,
  accountId: string,
  q: PageQuery<F>,
): Promise<{ total: number; entities: E[] }> {
  const ix = index as Index<E>;
  const dims = filterDimensions(index.declaration, accountId, q.filter);
  const { words, offset, limit } = q;
  if (q.sort) return findSortedPage(index, accountId, q, dims, q.sort, listReadBudget());

  if (words.length === 0 && dims.length === 0 && offset === 0) {
    // Unfiltered first page: the entity partition is already newest first, so one round trip serves it.
    const [counts, entities] = await Promise.all([
      getDimensionCounts(ix, accountId, [ALL]),
      newest(ix, accountId, limit),
    ]);
    return { total: counts[ALL] ?? 0, entities };
  }
  // Marks of creates' items put before their commits are checked beside the page's entities (DeferredMarks); only
  // where a create under way, or one that failed, put an item this page counted is it read again, checking each.
  return readCheckingMarks((deferred) => keyedPage(ix, accountId, q, dims, deferred));
}

/** A filtered or searched page; with `deferred`, and whether a pending mark it counted makes it read again. */
async function keyedPage<E, F>(
  ix: Index<E>,
  accountId: string,
  q: PageQuery<F>,
  dims: string[],
  deferred?: DeferredMarks,
): Promise<CheckedPage<E>> {
  const { words, offset, limit } = q;
  const withPending = besidePending(ix, accountId, deferred);
  if (words.length === 0 && dims.length <= 1) {
    const dim = dims[0] ?? ALL;
    const budget = listReadBudget();
    const sources = ix.postingSources(accountId, dim);
    if ((offset + limit) * sources.length > budget) {
      // A page this deep is read only after its counter says it holds entities within the budget: a page past
      // the end is empty without reading a key, and one that would read past the budget is refused unread.
      // (With the counts of the queues it is listed from, if any, each read no deeper than it holds.)
      const counts = await getDimensionCounts(ix, accountId, [...new Set([dim, ...sources])]);
      const total = counts[dim] ?? 0;
      if (total <= offset) return { page: { total, entities: [] }, recheck: false };
      if (Math.min(total, offset + limit) > budget) throw new ReadBudgetExceeded('page');
      const read = (caps: SourceCaps) =>
        queryPostings(ix, accountId, dim, Math.min(total, offset + limit), budget, caps, deferred);
      const keys = await read({ counts });
      const page = { keys, offset, limit, partitions: sources.length };
      return withPending(
        total,
        confirmedPage(ix, accountId, page, () => read({ counts, slack: limit })),
      );
    }
    const read = () => queryPostings(ix, accountId, dim, offset + limit, budget, undefined, deferred);
    const [counts, keys] = await Promise.all([getDimensionCounts(ix, accountId, [dim]), read()]);
    const total = counts[dim] ?? 0;
    // A page past the end, as its counter says, is not read again (merged-reads.ts).
    if (total <= offset) return { page: { total, entities: [] }, recheck: false };
    const page = { keys, offset, limit, partitions: sources.length };
    return withPending(total, confirmedPage(ix, accountId, page, read));
  }
  // Several dimensions, or search (how: intersection.ts, intersectKeys).
  const keys = (await intersectKeys(ix, accountId, dims, words, listReadBudget(), deferred))
    .sort()
    .reverse()
    .map(unpackOrderKey);
  // Only the keys it lists matter: a pending mark on a key the intersection left out counted nothing.
  return intersectedPage(ix, accountId, { dims, words, offset, limit }, keys, deferred);
}
