import { type IndexedEntityName, rebuildIndexOf } from '#lib/data/reindex.ts';

/**
 * `tickets|deals|contacts reindex SLUG` (admin): rebuilds the account's index of that entity (postings,
 * counters, queues, blocks, search terms, stats cells) from its entities as they are. For a table written before
 * an index (or a layout of it) existed, or to repair drift. The account must take no writes of the entity
 * meanwhile (see docs/data-model.md, "Reindex"). A run that stopped is continued by running it again
 * (`resumed`: true); the figures count the whole reindex.
 */
export async function reindex(entity: IndexedEntityName, accountId: string) {
  const { entities, written, removed, folded, emptied, resumed } = await rebuildIndexOf(entity, accountId);
  return {
    [entity]: entities,
    index_items_written: written,
    stale_items_removed: removed,
    count_shards_folded: folded,
    empty_blocks_removed: emptied,
    resumed,
  };
}
