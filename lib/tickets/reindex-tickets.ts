import { rebuildTicketIndex } from '#lib/data/tickets.ts';

/**
 * `tickets reindex SLUG` (admin): rebuilds the account's ticket index (postings, counters, queues, blocks,
 * search terms, stats) from its tickets as they are. For a table written before an index existed, or to repair
 * drift. The account must take no ticket writes meanwhile (see docs/data-model.md, "Reindex"). A run that
 * stopped is continued by running it again (`resumed`: true); the figures count the whole reindex.
 */
export async function reindexTickets(accountId: string) {
  const { tickets, written, removed, folded, emptied, resumed } = await rebuildTicketIndex(accountId);
  return {
    tickets,
    index_items_written: written,
    stale_items_removed: removed,
    count_shards_folded: folded,
    empty_blocks_removed: emptied,
    resumed,
  };
}
