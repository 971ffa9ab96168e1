import { findTicketPage } from '#lib/data/tickets/tickets.ts';
import { organizationsNow, withCurrentOrganizations } from '#lib/organizations/refs.ts';
import { type ListUrl, paginate, withinReadBudget } from '#lib/pagination.ts';
import { searchWords } from '#lib/search.ts';
import type { ListQuery } from './list-query.ts';
import { presentListedTicket } from './present.ts';

/** The `listTickets` route: filtered, searched, paginated, newest first; how each shape is read: lib/data/index/list.ts. */
export async function listTickets(accountId: string, query: ListQuery, at: ListUrl) {
  // Filtered by one organization: its current name is read beside the page (every ticket listed has it).
  const filtered =
    query.organizationId !== undefined ? organizationsNow(accountId, [query.organizationId]) : undefined;
  filtered?.catch(() => undefined);
  const { total, tickets } = await withinReadBudget(
    findTicketPage(accountId, {
      filter: query,
      words: query.search ? searchWords(query.search) : [],
      offset: (query.page - 1) * query.perPage,
      limit: query.perPage,
      sort: query.sort,
    }),
  );
  // Organizations under their names as they are now: one BatchGet of the page's distinct ones, when it names any.
  const shown = await withCurrentOrganizations(accountId, tickets, await filtered);
  return paginate(shown.map(presentListedTicket), total, query, at);
}
