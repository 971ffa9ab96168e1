import type { Ticket, TicketFilter } from '#lib/tickets/types.ts';
import { dimension, filterDimensions } from './ticket-index.ts';
import {
  getDimensionCounts,
  getTickets,
  newestTickets,
  postingsAmong,
  queryPostings,
  queryTerm,
} from './tickets.ts';

/** What a list asks for: filters, search words (every one must match), and the window of the page. */
export interface TicketPageQuery {
  filter: TicketFilter;
  words: string[];
  offset: number;
  limit: number;
}

/**
 * A point read of one posting costs what a Query costs for about this many keys (1 RCU for an item up to 4 KB,
 * against postings of ~80 bytes): fewer candidates than a dimension's size / this are checked key by key.
 */
const POINT_READ_COST_IN_KEYS = 50;

/** DynamoDB's largest Query Limit (2^31 − 1), far beyond any account's tickets. */
const MAX_LISTED = 2 ** 31 - 1 - 100;

/**
 * One page of tickets, newest first, and the exact total. Every filter is a dimension with a posting list and
 * an exact counter; two or three of status, priority and assignee are one queue dimension (docs/data-model.md,
 * cost model):
 * - no filter, first page: count ‖ the newest tickets from the ticket partition (1 round trip);
 * - one dimension (a single filter, or a queue): count ‖ that dimension's page of keys, then the page's tickets
 *   (2 round trips, O(per_page) reads at any account size; a deep page also reads the skipped keys, tiny);
 * - several dimensions, or search: the counters (an empty dimension ends it), then every dimension's keys and
 *   every word's term keys in parallel, intersected; only the page's tickets are read. O(keys of the named
 *   dimensions and words), never a ticket that is not on the page.
 */
export async function findTicketPage(
  accountId: string,
  q: TicketPageQuery,
): Promise<{ total: number; tickets: Ticket[] }> {
  const dims = filterDimensions(q.filter);
  const { words, offset, limit } = q;

  if (words.length === 0 && dims.length === 0 && offset === 0) {
    // Unfiltered first page: the ticket partition is already newest first, so one round trip serves it.
    const [counts, newest] = await Promise.all([
      getDimensionCounts(accountId, [dimension.all]),
      newestTickets(accountId, limit),
    ]);
    return { total: counts[dimension.all] ?? 0, tickets: newest };
  }
  if (words.length === 0 && dims.length <= 1) {
    const dim = dims[0] ?? dimension.all;
    // No account holds MAX_LISTED tickets: a page that starts past it is empty without reading a key.
    const [counts, keys] = await Promise.all([
      getDimensionCounts(accountId, [dim]),
      offset < MAX_LISTED ? queryPostings(accountId, dim, offset + limit) : [],
    ]);
    return { total: counts[dim] ?? 0, tickets: await getTickets(accountId, keys.slice(offset)) };
  }
  // Several dimensions, or search. The counters (beside the words' term keys) name an empty dimension, which
  // ends it, and the smallest. The driver (the words, or else the smallest dimension) gives the candidates; a
  // larger dimension is read whole (beside the driver when it cannot be small against it), or, when the
  // candidates are few against it, asked for just their postings, by key.
  const [counts, termSets] = await Promise.all([
    dims.length > 0 ? getDimensionCounts(accountId, dims) : {},
    Promise.all(words.map((w) => queryTerm(accountId, w))),
  ]);
  const size = (d: string) => (counts as Record<string, number>)[d] ?? 0;
  if (dims.some((d) => size(d) === 0)) return { total: 0, tickets: [] };
  const bySize = [...dims].sort((a, b) => size(a) - size(b));
  const driver = words.length === 0 ? bySize.shift() : undefined;
  const mostCandidates = driver ? size(driver) : Math.min(...termSets.map((t) => t.size));
  const readWhole = (d: string) => mostCandidates * POINT_READ_COST_IN_KEYS >= size(d);
  const wholeSets = new Map(
    await Promise.all(
      [...(driver ? [driver] : []), ...bySize.filter(readWhole)].map(
        async (d) => [d, new Set(await queryPostings(accountId, d))] as const,
      ),
    ),
  );
  let keys = intersect([...(driver ? [wholeSets.get(driver) as Set<string>] : termSets)]);
  const checked = bySize.filter((d) => !wholeSets.has(d));
  const found = await Promise.all(
    checked.map((d) => (keys.length > 0 ? postingsAmong(accountId, d, keys) : new Set<string>())),
  );
  const sets = [
    ...bySize.filter((d) => wholeSets.has(d)).map((d) => wholeSets.get(d) as Set<string>),
    ...found,
  ];
  keys = keys.filter((k) => sets.every((set) => set.has(k)));
  keys.sort().reverse();
  return { total: keys.length, tickets: await getTickets(accountId, keys.slice(offset, offset + limit)) };
}

function intersect(sets: Set<string>[]): string[] {
  const [smallest, ...rest] = [...sets].sort((a, b) => a.size - b.size);
  return [...(smallest ?? [])].filter((k) => rest.every((s) => s.has(k)));
}
