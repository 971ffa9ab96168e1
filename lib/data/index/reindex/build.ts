import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { batchDeleteAll, batchPutAll, dynamo, tableName } from '../../store/client.ts';
import { ATTR, chunks, entityOf, type ItemKey } from '../../store/items.ts';
import { ensureDirectoryEntries } from '../directory.ts';
import { type EntityItems, entityItems } from '../items.ts';
import { IndexTotals } from '../totals.ts';
import { type DueMove, dueMoveOf, writeDueEntry } from './due-entries.ts';
import { pagesOf } from './pages.ts';
import type { ReindexRun } from './run.ts';

/**
 * The reindex's first phase (account.ts): each page of entities puts its postings and terms (as they are: puts
 * that change nothing leave the lists as they were), adds its keys to its blocks (set additions), writes the
 * directory entries of its dimensions, moves the due entries that are not what the entity gives, and adds what
 * it counts in the stats cells to the sums kept in the progress item.
 */

/** BatchWrites of a page sent at once (each of 25 items). */
const PARALLEL_WRITES = 8;

export async function buildEntities<E>(run: ReindexRun<E>): Promise<void> {
  const { index, accountId, progress } = run;
  // The entities' partitions in turn: first where earlier releases kept them, if they are moved (each page put in
  // their partitions, then deleted there), then each partition. The cursor: the partition's place and last key.
  const moved = index.keys.movedItemPartition(accountId);
  const partitions = [...(moved ? [moved] : []), ...index.keys.itemPartitions(accountId)];
  // A run saved by an earlier release (its cursor an order key, no partition): its pages were built where the items
  // were, not moved, so this run starts over, its sums from zero.
  if (progress.after !== undefined && !progress.after.includes(':'))
    Object.assign(progress, {
      after: undefined,
      stats: {},
      entities: 0,
      written: 0,
      removed: 0,
      folded: 0,
      emptied: 0,
    });
  const cursor = () => {
    const at = progress.after ?? '0:';
    const colon = at.indexOf(':');
    return { partition: Number(at.slice(0, colon)), after: at.slice(colon + 1) || undefined };
  };
  for (let p = cursor().partition; p < partitions.length; p++) {
    const pk = partitions[p] as string;
    for await (const { items } of pagesOf(pk, () => cursor().after, { limit: run.pageSize })) {
      run.held(items.length);
      // A moved page is built where it is moved to, with that partition's pages (read after this one).
      if (pk === moved) await moveItems(run, items);
      else await buildPage(run, items);
      progress.after = `${p}:${items[items.length - 1]?.sk as string}`;
      await run.save();
    }
    progress.after = `${p + 1}:`;
  }
}

/**
 * Entity items of the partition earlier releases kept them in, put where they are kept now (as they are), then
 * deleted there: a run stopped between the two puts the same items again.
 */
async function moveItems<E>(run: ReindexRun<E>, items: Record<string, unknown>[]): Promise<void> {
  const moved = items.map((item) => ({ ...item, ...run.index.keys.item(run.accountId, item.sk as string) }));
  await batchPutAll(moved);
  await batchDeleteAll(items.map((item) => ({ pk: item.pk, sk: item.sk })));
  run.progress.written += moved.length;
}

/** What a page of entities writes: their own items, their dimensions, their blocks and sums, their due moves. */
function pageItems<E>(run: ReindexRun<E>, items: Record<string, unknown>[]) {
  const { index, accountId, progress } = run;
  const totals = new IndexTotals(index, accountId, progress.stats);
  const puts: Record<string, unknown>[] = [];
  const dimensions: string[] = [];
  const dueMoves: DueMove[] = [];
  for (const item of items) {
    const entity = entityOf<E>(item);
    const built = entityItems(index, accountId, entity);
    puts.push(...ownItems(built));
    totals.add(built);
    dimensions.push(...index.dimensionsOf(accountId, entity));
    const move = index.declaration.due && dueMoveOf(item, built.entity);
    if (move) dueMoves.push(move);
  }
  return { totals, puts, dimensions, dueMoves };
}

async function buildPage<E>(run: ReindexRun<E>, items: Record<string, unknown>[]): Promise<void> {
  const { index, accountId, progress } = run;
  const { totals, puts, dimensions, dueMoves } = pageItems(run, items);
  // The directory first: a dimension is listed before any item of it is written.
  progress.written += await ensureDirectoryEntries(index, accountId, dimensions);
  await Promise.all(chunks(puts, Math.ceil(puts.length / PARALLEL_WRITES) || 1).map(batchPutAll));
  const blocks = totals.blockAdditions();
  for (const group of chunks(blocks, 25)) await Promise.all(group.map(addToBlock));
  let moved = 0;
  for (const group of chunks(dueMoves, 25)) {
    moved += (await Promise.all(group.map(writeDueEntry))).filter(Boolean).length;
  }
  progress.entities += items.length;
  progress.written += puts.length + blocks.length + moved;
  progress.stats = totals.statsSums();
}

/** An entity's own index items: what a create puts (its postings and terms); counters and blocks are shared. */
function ownItems(built: EntityItems): Record<string, unknown>[] {
  return [
    ...built.boundedPostings,
    ...built.sortedPostings,
    ...built.unbounded.map((u) => u.posting),
    ...(built.numberTerm ? [built.numberTerm] : []),
    ...built.prefixTerms,
  ];
}

function addToBlock({ key, packed }: { key: ItemKey; packed: Set<string> }) {
  return dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: key,
      UpdateExpression: 'ADD #k :keys',
      ExpressionAttributeNames: { '#k': ATTR.blockKeys },
      ExpressionAttributeValues: { ':keys': packed },
    }),
  );
}
