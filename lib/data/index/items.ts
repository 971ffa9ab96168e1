import { type IndexKeys, indexKeys, orderKeys } from '../keys.ts';
import { ATTR, type ItemKey, packedFields } from '../store/items.ts';
import type { IndexDeclaration, SearchTerms, StatsFamily } from './declaration.ts';
import {
  dimensionsOf,
  hasBlocks,
  hasPostings,
  isQueueDimension,
  listsItsParts,
  postingSources,
} from './dimensions.ts';
import { keyedTerm } from './keyed.ts';
import { packOrderKey } from './order-key.ts';
import {
  isStatsDimension,
  type StatsCell,
  statsAttribute,
  statsCellOf,
  statsFamilies,
} from './stats-cells.ts';
import { sampledTerm } from './term-sample.ts';

/** An entity's declaration with what the engine derives from it once: its keys, item types, dimensions. */
export interface Index<E, F = unknown> {
  declaration: IndexDeclaration<E, F>;
  keys: IndexKeys;
  /** Item types: the entity's (`ticket`), its postings' and its terms'. */
  types: { entity: string; posting: string; term: string };
  orderKeyOf(entity: E): string;
  /** The dimensions an entity is listed under, as the account's keys name them (dimensions.ts). */
  dimensionsOf(accountId: string, entity: E): string[];
  isStatsDimension(dim: string): boolean;
  /** The partitions a dimension's postings are read from: its own, or a queue's that lists it (dimensions.ts). */
  postingSources(accountId: string, dim: string): string[];
  /**
   * Whether a dimension keeps sorted postings (IndexDeclaration.sorts): `all` and the bounded ones that keep
   * postings, and the queues that list their parts (those parts' are theirs, merged: sortedSources), no other
   * queue; with a sort, of that sort (IndexDeclaration.sortedIn).
   */
  isSortedDimension(dim: string, sort?: string): boolean;
  /**
   * The sorted partitions a dimension's order is read from: its own, or those of the queue that lists it (one for
   * each value of its other parts, as postingSources); none when it keeps no order of that sort.
   */
  sortedSources(accountId: string, dim: string, sort: string): string[];
  /** Its search terms as written (the entity item's `t`); keys name each by keyedTerm. */
  termsOf(entity: E): SearchTerms;
  /** The stats cell an attribute is kept in (stats-cells.ts, statsCellOf). */
  statsCellOf(attribute: string): StatsCell;
  /** Every family of stats cells, `counts` first. */
  statsFamilies: StatsFamily[];
}

export function defineIndex<E, F>(declaration: IndexDeclaration<E, F>): Index<E, F> {
  const type = declaration.entity.toLowerCase();
  return {
    declaration,
    keys: indexKeys(declaration.entity),
    types: { entity: type, posting: `${type}_posting`, term: `${type}_term` },
    orderKeyOf: (entity) => {
      const { createdMicros, number } = declaration.order(entity);
      return orderKeys.of(createdMicros, number);
    },
    dimensionsOf: (accountId, entity) =>
      dimensionsOf(declaration as IndexDeclaration<E, unknown>, accountId, entity),
    isStatsDimension: (dim) => isStatsDimension(declaration as IndexDeclaration<E, unknown>, dim),
    postingSources: (accountId, dim) =>
      postingSources(declaration as IndexDeclaration<E, unknown>, accountId, dim),
    isSortedDimension: (dim, sort) => isSorted(declaration as IndexDeclaration<E, unknown>, dim, sort),
    sortedSources: (accountId, dim, sort) => {
      const d = declaration as IndexDeclaration<E, unknown>;
      if (isSorted(d, dim, sort)) return [dim];
      const sources = postingSources(d, accountId, dim);
      return sources.length > 1 && sources.every((s) => isSorted(d, s, sort)) ? sources : [];
    },
    termsOf: (entity) => declaration.search?.(entity) ?? { prefixes: [] },
    statsCellOf: (attribute) => statsCellOf(declaration as IndexDeclaration<E, unknown>, attribute),
    statsFamilies: statsFamilies(declaration as IndexDeclaration<E, unknown>),
  };
}

/** An entity's packed order key in one dimension's block (lib/data/keys.ts, indexKeys().block). */
export interface BlockEntry {
  key: ItemKey;
  packed: string;
}

/**
 * The items of an entity, as data: what to put, and which counters to increment. Its create's commit, the
 * update's diff, the reindex and the benchmark's bulk loader all write exactly these.
 */
export interface EntityItems {
  entity: Record<string, unknown>;
  /** What the entity adds to stats attributes: 1 to each count, its amounts to declared sums. */
  statsAdds: [attribute: string, amount: string][];
  /** Postings of the bounded dimensions that keep their own (dimensions.ts, hasPostings): atomic with the entity. */
  boundedPostings: Record<string, unknown>[];
  /** Each unbounded dimension: its posting and the dimension (whose sharded counter it adds one to). */
  unbounded: { posting: Record<string, unknown>; dim: string }[];
  /** The number term (always in the commit), when the entity is found by its number. */
  numberTerm: Record<string, unknown> | undefined;
  prefixTerms: Record<string, unknown>[];
  /** The entity's packed order key in the block of each of its dimensions but `all`. */
  blocks: BlockEntry[];
  /** Its sorted postings (IndexDeclaration.sorts): one per sort in `all` and each bounded dimension. */
  sortedPostings: Record<string, unknown>[];
}

/**
 * `prefixTerms: false`: none of its prefix terms (an update whose terms are those it had: their keys, an HMAC a
 * character each, are most of the CPU of a ticket's items).
 */
export function entityItems<E>(
  index: Index<E>,
  accountId: string,
  entity: E,
  version = 1,
  options: { prefixTerms?: boolean } = {},
): EntityItems {
  const { keys, types, declaration } = index;
  const orderKey = index.orderKeyOf(entity);
  const { number } = declaration.order(entity);
  const dims = index.dimensionsOf(accountId, entity);
  const terms = index.termsOf(entity);
  const prefixes = options.prefixTerms === false ? [] : terms.prefixes;
  const bounded = dims.filter(index.isStatsDimension);
  const posting = (d: string) => ({ ...keys.posting(accountId, d, orderKey), type: types.posting });
  const counters = Object.entries(declaration.statsCounters ?? {}).flatMap(([name, counter]) =>
    Object.entries(counter.adds(entity)).map(([value, amount]): [string, string] => [
      statsAttribute.counter(name, value),
      String(amount),
    ]),
  );
  const due = declaration.due?.(entity);
  return {
    entity: {
      ...keys.item(accountId, orderKey),
      ...(due === undefined ? {} : keys.due(accountId, orderKey, due)),
      type: types.entity,
      ...packedFields(entity as Record<string, unknown>, declaration.packed),
      // Its terms are not kept on it (`t`, before issue 40: ~130 bytes a ticket, on every write of the item): a
      // marked term is checked against the terms its texts give now (order-key-reads.ts, holdsTerm).
      [ATTR.version]: version,
    },
    statsAdds: [...bounded.map((d): [string, string] => [statsAttribute.count(d), '1']), ...counters],
    boundedPostings: bounded
      .filter((d) => hasPostings(declaration as IndexDeclaration<E, unknown>, d))
      .map(posting),
    unbounded: dims.filter((d) => !index.isStatsDimension(d)).map((d) => ({ posting: posting(d), dim: d })),
    numberTerm:
      terms.number === undefined
        ? undefined
        : { ...keys.numberTerm(accountId, terms.number, orderKey), type: types.term },
    // Each with its copy in the terms' sample when it is sampled (term-sample.ts).
    prefixTerms: prefixes.flatMap((t) => {
      const keyed = keyedTerm(accountId, t);
      const term = { ...keys.prefixTerm(accountId, keyed, orderKey), type: types.term };
      if (!sampledTerm(number, t)) return [term];
      return [term, { ...keys.sampleTerm(accountId, keyed, orderKey), type: types.term }];
    }),
    sortedPostings: Object.entries(declaration.sorts ?? {}).flatMap(([sort, sortValue]) => {
      const value = sortValue(entity);
      return bounded
        .filter((d) => index.isSortedDimension(d, sort))
        .map((d) => ({
          ...keys.sorted(accountId, sort, d, value, orderKey),
          type: `${types.posting}_sorted`,
        }));
    }),
    blocks: dims
      .filter((d) => hasBlocks(declaration as IndexDeclaration<E, unknown>, d))
      .map((d) => ({ key: keys.block(accountId, d, number), packed: packOrderKey(orderKey) })),
  };
}

function isSorted<E>(declaration: IndexDeclaration<E, unknown>, dim: string, sort?: string): boolean {
  return (
    isStatsDimension(declaration, dim) &&
    sortKeptIn(declaration.sortedIn?.[sort ?? ''], dim) &&
    (isQueueDimension(dim) ? listsItsParts(declaration, dim) : hasPostings(declaration, dim))
  );
}

/** Whether a sort kept in `only` (IndexDeclaration.sortedIn; undefined: everywhere) is kept in dimension `dim`. */
function sortKeptIn(only: readonly string[] | undefined, dim: string): boolean {
  return only === undefined || only.includes(dim.includes('#') ? dim.slice(0, dim.indexOf('#')) : dim);
}
