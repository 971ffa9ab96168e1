import { allTickets, rebuildTicketIndex } from '#lib/data/ticket-reindex.ts';
import { termsOfTicket } from './search-terms.ts';
import { isOpenWork } from './types.ts';

/**
 * `tickets reindex SLUG` (admin): rebuilds the account's ticket index (postings, counters, queues, blocks,
 * search terms, stats) from its tickets as they are. For a table written before an index existed, or to repair
 * drift. The account must take no ticket writes meanwhile (see docs/data-model.md, "Reindex").
 */
export async function reindexTickets(accountId: string) {
  const tickets = await allTickets(accountId);
  const { written, removed } = await rebuildTicketIndex(
    accountId,
    tickets.map((ticket) => ({
      accountId,
      ticket,
      openWork: isOpenWork(ticket),
      terms: termsOfTicket(ticket),
    })),
  );
  return { tickets: tickets.length, index_items_written: written, stale_items_removed: removed };
}
