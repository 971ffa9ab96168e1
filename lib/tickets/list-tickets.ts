import {
  getDimensionCounts,
  getTickets,
  newestTickets,
  queryPostings,
  queryTerm,
} from '#lib/data/tickets.ts';
import type { ListQuery } from './list-query.ts';
import { presentListedTicket } from './present.ts';
import { searchWords } from './search-terms.ts';
import { customFieldText, dimension, type Ticket } from './types.ts';

/**
 * GET /api/tickets. Every filter is a dimension with a posting list (newest first) and an exact counter:
 * - no filter, first page: count ‖ the newest tickets from the ticket partition (1 round trip);
 * - no filter or one filter: count ‖ that dimension's page of keys, then the page's tickets (2 round trips,
 *   O(per_page) reads at any account size; a deep page also reads the skipped keys, which are tiny);
 * - several filters: the counters pick the smallest dimension, whose tickets are read and filtered (O(smallest));
 * - search: each word's term postings are read and intersected (exact, no index lag); the page's tickets are
 *   read, or all candidates when filters are combined with it (O(matches)).
 * Cost model in docs/data-model.md.
 */
export async function listTickets(accountId: string, query: ListQuery, baseUrl: string) {
  const dims = filterDimensions(query);
  const words = query.search ? searchWords(query.search) : [];
  const offset = (query.page - 1) * query.perPage;
  let total: number;
  let tickets: Ticket[];

  if (words.length === 0 && dims.length === 0 && offset === 0) {
    // Unfiltered first page: the ticket partition is already newest first, so one round trip serves it.
    const [counts, newest] = await Promise.all([
      getDimensionCounts(accountId, [dimension.all]),
      newestTickets(accountId, query.perPage),
    ]);
    total = counts[dimension.all] ?? 0;
    tickets = newest;
  } else if (words.length === 0 && dims.length <= 1) {
    const dim = dims[0] ?? dimension.all;
    // No account holds MAX_LISTED tickets: a page that starts past it is empty without reading a key.
    const [counts, keys] = await Promise.all([
      getDimensionCounts(accountId, [dim]),
      offset < MAX_LISTED ? queryPostings(accountId, dim, offset + query.perPage) : [],
    ]);
    total = counts[dim] ?? 0;
    tickets = await getTickets(accountId, keys.slice(offset));
  } else {
    let candidates: string[];
    if (words.length > 0) {
      const sets = await Promise.all(words.map((w) => queryTerm(accountId, w)));
      candidates = intersect(sets);
    } else {
      const counts = await getDimensionCounts(accountId, dims);
      const driver = dims.reduce((best, d) => ((counts[d] ?? 0) < (counts[best] ?? 0) ? d : best));
      candidates = (counts[driver] ?? 0) === 0 ? [] : await queryPostings(accountId, driver);
    }
    candidates.sort().reverse();
    if (dims.length === 0) {
      total = candidates.length;
      tickets = await getTickets(accountId, candidates.slice(offset, offset + query.perPage));
    } else {
      const matches = (await getTickets(accountId, candidates)).filter((t) => matchesFilters(t, query));
      total = matches.length;
      tickets = matches.slice(offset, offset + query.perPage);
    }
  }
  return paginate(tickets.map(presentListedTicket), total, query, baseUrl);
}

/** DynamoDB's largest Query Limit (2^31 − 1); far beyond any account's tickets. */
const MAX_LISTED = 2 ** 31 - 1 - 100;

function filterDimensions(q: ListQuery): string[] {
  return [
    ...(q.status ? [dimension.status(q.status)] : []),
    ...(q.priority ? [dimension.priority(q.priority)] : []),
    ...(q.assigneeId !== undefined ? [dimension.assignee(q.assigneeId)] : []),
    ...(q.requesterEmail !== undefined ? [dimension.email(q.requesterEmail)] : []),
    ...q.customFields.map(([key, text]) => dimension.customField(key, text)),
  ];
}

export function matchesFilters(t: Ticket, q: ListQuery): boolean {
  if (q.status && t.status !== q.status) return false;
  if (q.priority && t.priority !== q.priority) return false;
  if (q.assigneeId !== undefined && t.assignee?.id !== q.assigneeId) return false;
  if (q.requesterEmail !== undefined && t.requester.email.toLowerCase() !== q.requesterEmail.toLowerCase())
    return false;
  return q.customFields.every(
    ([key, text]) =>
      Object.hasOwn(t.customFields, key) && customFieldText(t.customFields[key] ?? null) === text,
  );
}

function intersect(sets: Set<string>[]): string[] {
  const [smallest, ...rest] = [...sets].sort((a, b) => a.size - b.size);
  return [...(smallest ?? [])].filter((k) => rest.every((s) => s.has(k)));
}

/** Laravel's paginator shape: data, links (first/last/prev/next), meta. */
function paginate<T>(data: T[], total: number, q: ListQuery, baseUrl: string) {
  const path = `${baseUrl}/api/tickets`;
  const lastPage = Math.max(1, Math.ceil(total / q.perPage));
  const extra = q.linkParams.map(([k, v]) => `&${encodeKey(k)}=${encodeURIComponent(v)}`).join('');
  const url = (page: number) => `${path}?page=${page}${extra}`;
  const from = data.length > 0 ? (q.page - 1) * q.perPage + 1 : null;
  return {
    data,
    links: {
      first: url(1),
      last: url(lastPage),
      prev: q.page > 1 ? url(q.page - 1) : null,
      next: q.page < lastPage ? url(q.page + 1) : null,
    },
    meta: {
      current_page: q.page,
      from,
      last_page: lastPage,
      path,
      per_page: q.perPage,
      to: from === null ? null : from + data.length - 1,
      total,
    },
  };
}

/** Query keys keep their brackets readable: custom_fields[plan]. */
function encodeKey(key: string): string {
  return encodeURIComponent(key).replaceAll('%5B', '[').replaceAll('%5D', ']');
}
