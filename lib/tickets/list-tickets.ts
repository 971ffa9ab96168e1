import { findTicketPage } from '#lib/data/tickets.ts';
import { searchWords } from '#lib/search.ts';
import type { ListQuery } from './list-query.ts';
import { presentListedTicket } from './present.ts';

/** GET /api/tickets: filtered, searched, paginated, newest first; how each shape is read: lib/data/index/list.ts. */
export async function listTickets(accountId: string, query: ListQuery, baseUrl: string) {
  const { total, tickets } = await findTicketPage(accountId, {
    filter: query,
    words: query.search ? searchWords(query.search) : [],
    offset: (query.page - 1) * query.perPage,
    limit: query.perPage,
  });
  return paginate(tickets.map(presentListedTicket), total, query, baseUrl);
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
