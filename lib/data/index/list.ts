import { intEnv } from '#lib/config/env.ts';
import { queryAll, tableName } from '../client.ts';
import { ReadBudgetExceeded } from '../errors.ts';
import { ATTR } from '../items.ts';
import { NUMBERS_PER_BLOCK } from '../keys.ts';
import { ALL, dimensionName, filterDimensions } from './declaration.ts';
import type { Index } from './items.ts';
import { packOrderKey, unpackOrderKey } from './order-key.ts';
import { postingsAmong, queryBlocks, queryPostings, queryTerm } from './order-key-reads.ts';
import { getByOrderKeys, getDimensionCounts, newest } from './reads.ts';

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
 *   the named dimensions and words) at about 16 bytes a key, never an entity that is not on the page.
 */
export async function findPage<E, F>(
  index: Index<E, F>,
  accountId: string,
  q: PageQuery<F>,
): Promise<{ total: number; entities: E[] }> {
  const ix = index as Index<E>;
  const dims = filterDimensions(index.declaration, accountId, q.filter);
  const { words, offset, limit } = q;
  if (q.sort) return findSortedPage(index, accountId, q, dims, q.sort);

  if (words.length === 0 && dims.length === 0 && offset === 0) {
    // Unfiltered first page: the entity partition is already newest first, so one round trip serves it.
    const [counts, entities] = await Promise.all([
      getDimensionCounts(ix, accountId, [ALL]),
      newest(ix, accountId, limit),
    ]);
    return { total: counts[ALL] ?? 0, entities };
  }
  if (words.length === 0 && dims.length <= 1) {
    const dim = dims[0] ?? ALL;
    const budget = listReadBudget();
    if (offset + limit > budget) {
      // A page this deep is read only after its counter says it holds entities within the budget: a page past
      // the end is empty without reading a key, and one that would read past the budget is refused unread.
      const total = (await getDimensionCounts(ix, accountId, [dim]))[dim] ?? 0;
      if (total <= offset) return { total, entities: [] };
      if (Math.min(total, offset + limit) > budget) throw new ReadBudgetExceeded('page');
      const keys = await queryPostings(ix, accountId, dim, Math.min(total, offset + limit), budget);
      return { total, entities: await getByOrderKeys(ix, accountId, keys.slice(offset, offset + limit)) };
    }
    const [counts, keys] = await Promise.all([
      getDimensionCounts(ix, accountId, [dim]),
      queryPostings(ix, accountId, dim, offset + limit, budget),
    ]);
    return {
      total: counts[dim] ?? 0,
      entities: await getByOrderKeys(ix, accountId, keys.slice(offset, offset + limit)),
    };
  }
  // Several dimensions, or search (how: intersectKeys).
  const keys = await intersectKeys(ix, accountId, dims, words);
  keys.sort().reverse();
  const page = keys.slice(offset, offset + limit).map(unpackOrderKey);
  return { total: keys.length, entities: await getByOrderKeys(ix, accountId, page) };
}

/**
 * The packed keys of every entity that several dimensions, or search words, name. The counters (beside the words'
 * term keys) name an empty dimension, which ends it, and the smallest. The driver (the words, or else the smallest
 * dimension) gives the candidates; a larger dimension's blocks are read whole (beside the driver) when that costs
 * less than asking for each candidate's posting by key, which it does unless the candidates are few against it.
 * Keys are intersected packed (as the blocks hold them).
 */
async function intersectKeys<E>(
  ix: Index<E>,
  accountId: string,
  dims: string[],
  words: string[],
): Promise<string[]> {
  const [counts, termSets] = await Promise.all([
    dims.length > 0 ? getDimensionCounts(ix, accountId, [ALL, ...dims]) : {},
    // The budget is shared evenly by the words, each refused when its own share runs out.
    Promise.all(words.map((w) => wordKeys(ix, accountId, w, Math.floor(listReadBudget() / words.length)))),
  ]);
  const size = (d: string) => (counts as Record<string, number>)[d] ?? 0;
  if (dims.some((d) => size(d) === 0)) return [];
  const wordCandidates = words.length > 0 ? Math.min(...termSets.map((t) => t.size)) : undefined;
  const sizes = dims.map((d) => ({ dim: d, size: size(d) }));
  // The words' keys are read: what is left of the budget bounds the dimensions' keys, before any is read.
  const wordKeysRead = termSets.reduce((n, t) => n + t.size, 0);
  const plan = planWithinBudget(
    planIntersection(sizes, size(ALL), wordCandidates),
    sizes,
    wordCandidates,
    listReadBudget() - wordKeysRead,
  );
  const wholeSets = new Map(
    await Promise.all(
      [...(plan.driver ? [plan.driver] : []), ...plan.whole].map(
        async (d) => [d, await queryBlocks(ix, accountId, d)] as const,
      ),
    ),
  );
  let keys = intersect(plan.driver ? [wholeSets.get(plan.driver) as Set<string>] : termSets);
  const found = await Promise.all(
    plan.byKey.map(async (d) =>
      keys.length > 0
        ? packedSet(await postingsAmong(ix, accountId, d, keys.map(unpackOrderKey)))
        : new Set<string>(),
    ),
  );
  const sets = [...plan.whole.map((d) => wholeSets.get(d) as Set<string>), ...found];
  keys = keys.filter((k) => sets.every((set) => set.has(k)));
  return keys;
}

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
 */
async function findSortedPage<E, F>(
  index: Index<E, F>,
  accountId: string,
  q: PageQuery<F>,
  dims: string[],
  sort: string,
): Promise<{ total: number; entities: E[] }> {
  const ix = index as Index<E>;
  const sortValue = index.declaration.sorts?.[sort];
  if (!sortValue) throw new Error(`${index.declaration.entity}: no sort ${sort}`);
  const { words, offset, limit } = q;
  const budget = listReadBudget();
  const single = dims[0];
  if (
    words.length === 0 &&
    (dims.length === 0 || (dims.length === 1 && single && ix.isStatsDimension(single)))
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
    const total = (await getDimensionCounts(ix, accountId, [single]))[single] ?? 0;
    if (total > budget) throw new ReadBudgetExceeded('page');
    matches = await queryPostings(ix, accountId, single, total, budget);
  } else {
    matches = (await intersectKeys(ix, accountId, dims, words)).map(unpackOrderKey);
  }
  const total = matches.length;
  if (total <= offset) return { total, entities: [] };
  const wanted = index.declaration.filter(q.filter);
  const bounded = Object.entries(wanted).flatMap(([name, values]) =>
    values.map((v) => dimensionName(name, v)).filter((d) => ix.isStatsDimension(d)),
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

/** How several dimensions are intersected: which drives, which are read whole, which are asked by key. */
export interface IntersectionPlan {
  /** The smallest dimension, whose keys are the candidates (none when search words drive). */
  driver: string | undefined;
  /** Dimensions whose blocks are read whole, beside the driver. */
  whole: string[];
  /** Dimensions asked for just the candidates' postings, by key, once the candidates are known. */
  byKey: string[];
}

/**
 * The cheapest exact plan, from the counters: the search words drive (their candidates are given), or else the
 * smallest dimension; each other dimension is read whole when its blocks cost no more read units than asking
 * for every candidate's posting by key (a unit each), which is the case unless the candidates are few
 * against it.
 */
export function planIntersection(
  dims: { dim: string; size: number }[],
  accountSize: number,
  wordCandidates: number | undefined,
): IntersectionPlan {
  const bySize = [...dims].sort((a, b) => a.size - b.size);
  const driver = wordCandidates === undefined ? bySize.shift() : undefined;
  const candidates = driver ? driver.size : (wordCandidates ?? 0);
  const readWhole = (d: { size: number }) => blockReadUnits(d.size, accountSize) <= candidates;
  return {
    driver: driver?.dim,
    whole: bySize.filter(readWhole).map((d) => d.dim),
    byKey: bySize.filter((d) => !readWhole(d)).map((d) => d.dim),
  };
}

/**
 * The index keys a plan reads, from the counters: the driver's and each whole dimension's keys (their blocks),
 * and each candidate's posting in every dimension asked by key.
 */
export function planKeys(
  plan: IntersectionPlan,
  dims: { dim: string; size: number }[],
  wordCandidates: number | undefined,
): number {
  const size = (d: string) => dims.find((x) => x.dim === d)?.size ?? 0;
  const candidates = plan.driver ? size(plan.driver) : (wordCandidates ?? 0);
  return (
    (plan.driver ? candidates : 0) +
    plan.whole.reduce((n, d) => n + size(d), 0) +
    candidates * plan.byKey.length
  );
}

/**
 * The plan, if its keys fit the budget; else the plan that reads fewest keys (each dimension read whole only when
 * it holds no more keys than there are candidates, asked by key otherwise: one more round trip, only for such
 * lists), if that fits; else ReadBudgetExceeded (`filters`), before any key of the dimensions is read.
 */
export function planWithinBudget(
  plan: IntersectionPlan,
  dims: { dim: string; size: number }[],
  wordCandidates: number | undefined,
  budget: number,
): IntersectionPlan {
  if (planKeys(plan, dims, wordCandidates) <= budget) return plan;
  const size = (d: string) => dims.find((x) => x.dim === d)?.size ?? 0;
  const candidates = plan.driver ? size(plan.driver) : (wordCandidates ?? 0);
  const others = [...plan.whole, ...plan.byKey];
  const fewest: IntersectionPlan = {
    driver: plan.driver,
    whole: others.filter((d) => size(d) <= candidates),
    byKey: others.filter((d) => size(d) > candidates),
  };
  if (planKeys(fewest, dims, wordCandidates) <= budget) return fewest;
  throw new ReadBudgetExceeded('filters');
}

/**
 * Read units of a dimension's blocks, read whole, estimated: its packed keys (16 bytes each) and the keys and
 * overhead of its blocks (about 100 bytes each; about one block per NUMBERS_PER_BLOCK entities of the account, and
 * at most one per entity it lists; more where numbers were lost to failed creates or blocks were emptied by
 * updates, so the estimate leans towards reading whole). A posting read by key costs one unit.
 */
function blockReadUnits(listed: number, accountSize: number): number {
  const blocks = Math.min(listed, Math.ceil(accountSize / NUMBERS_PER_BLOCK) + 1);
  return (listed * PACKED_KEY_BYTES + blocks * BLOCK_OVERHEAD_BYTES) / READ_UNIT_BYTES;
}
const PACKED_KEY_BYTES = 16;
const BLOCK_OVERHEAD_BYTES = 100;
const READ_UNIT_BYTES = 4096;

/**
 * Packed keys of the entities a word matches: its terms, and the dimensions the declaration relates to it, the
 * two reads sharing the word's budget.
 */
async function wordKeys<E>(
  index: Index<E>,
  accountId: string,
  word: string,
  budget: number,
): Promise<Set<string>> {
  const { searchRelated } = index.declaration;
  const share = searchRelated ? Math.floor(budget / 2) : budget;
  const [terms, related] = await Promise.all([
    queryTerm(index, accountId, word, share),
    searchRelated?.(accountId, word, share) ?? [],
  ]);
  const keys = packedSet(terms);
  for (const set of await Promise.all(related.map((d) => queryBlocks(index, accountId, d)))) {
    for (const k of set) keys.add(k);
  }
  return keys;
}

function packedSet(orderKeys: Iterable<string>): Set<string> {
  const packed = new Set<string>();
  for (const k of orderKeys) packed.add(packOrderKey(k));
  return packed;
}

function intersect(sets: Set<string>[]): string[] {
  const [smallest, ...rest] = [...sets].sort((a, b) => a.size - b.size);
  return [...(smallest ?? [])].filter((k) => rest.every((s) => s.has(k)));
}
