import type { Index } from '../items.ts';
import { buildEntities } from './build.ts';
import { type ReindexOptions, type ReindexResult, ReindexRun } from './run.ts';
import { setStats } from './stats.ts';
import { sweepDirectory } from './sweep.ts';
import { sweepTerms } from './terms.ts';

/**
 * Rebuilds an account's index of an entity from its entities, page by page (docs/data-model.md, "Reindex"):
 * every posting, term, counter, block and stats cell become exactly what creating the entities as they are now
 * would have written (a sharded counter's or cell's total in its shard 0, its other shards deleted), and index
 * items no entity accounts for are deleted (with the blocks of earlier releases). It reads
 * only the account's own partitions (its entities, its stats cells' partitions, its directory of dimensions, each
 * dimension's postings and blocks, its terms), never a Scan; it holds at most `pageSize` entities at a time; and it keeps its phase and cursor in a progress item
 * after every page, so a run that stops (a crash, a timeout, Ctrl-C) is continued by running it again (run.ts).
 *
 * 1. build (build.ts): each page of entities puts its postings and terms (as they are: puts that change nothing
 *    leave the lists as they were), adds its keys to its blocks (set additions), writes the directory entries of
 *    its dimensions and adds what it counts in the stats cells to the sums kept in the progress item.
 * 2. stats (stats.ts): each family of stats cells (a partition each, Queried) is set to the sums: a cell's totals
 *    put in one item (a sharded cell's in shard 0) and its other shards deleted in the same transaction, so a
 *    reader sums the same total before and after; cells no entity counts in are deleted.
 * 3. sweep (sweep.ts): each dimension of the directory: its postings are read page by page and each checked
 *    against its entity (one BatchGet a page); those of entities absent or no longer in the dimension are
 *    deleted, the rest counted into its counter (put in shard 0, the other shards and an earlier release's
 *    `#COUNT` deleted in the same transaction); its blocks are rewritten to the keys of entities they hold, or
 *    deleted (a block its updates emptied, or one of the earlier layout).
 * 4. terms (terms.ts): the terms partition, checked the same way.
 * Marked items of a create that may still land (its pending item younger than a create can run: pending.ts,
 * stillPending) are kept; those of one that ended without landing are deleted. Its pending item stays (a
 * dimension the create alone named has no directory entry, so no sweep meets its items there: they stay checked).
 * It is a maintenance step, not a concurrent one: the account must take no writes of the entity while it runs.
 */
export async function reindexAccount<E>(
  index: Index<E>,
  accountId: string,
  options: ReindexOptions = {},
): Promise<ReindexResult> {
  const run = await ReindexRun.open(index, accountId, options);
  const { progress } = run;
  if (progress.phase === 'build') {
    await buildEntities(run);
    await run.begin('stats');
  }
  if (progress.phase === 'stats') {
    await setStats(run);
    await run.begin('sweep');
  }
  if (progress.phase === 'sweep') {
    await sweepDirectory(run);
    await run.begin('terms');
  }
  if (progress.phase === 'terms') await sweepTerms(run);
  return run.finish();
}
