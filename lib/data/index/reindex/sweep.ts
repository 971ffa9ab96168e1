import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from '../../store/client.ts';
import { ALL } from '../declaration.ts';
import { isQueueDimension } from '../dimensions.ts';
import type { DimensionProgress, ReindexRun } from './run.ts';
import { sweepBlocks } from './sweep-blocks.ts';
import { foldCounter, sweepPostings } from './sweep-postings.ts';
import { sweepSorted } from './sweep-sorted.ts';

/**
 * The reindex's third phase (account.ts): each dimension of the account's directory in turn, its postings
 * checked against their entities and counted (sweep-postings.ts), its blocks kept to the keys of entities they
 * hold (sweep-blocks.ts), its sorted postings kept to what their entities give (sweep-sorted.ts), page by page,
 * the cursor saved after each page.
 */
export async function sweepDirectory<E>(run: ReindexRun<E>): Promise<void> {
  const { index, accountId, progress } = run;
  for (;;) {
    // The dimension under way, if a run stopped in it, else the ones after the last done. Dimension names
    // start with a letter: the progress item (`#REINDEX`) sorts before them all.
    const under = progress.dimension?.name;
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: under ? 'pk = :pk AND sk >= :from' : 'pk = :pk AND sk > :from',
        ExpressionAttributeValues: {
          ':pk': index.keys.directoryPartition(accountId),
          ':from': under ?? progress.after ?? run.progressKey.sk,
        },
        ProjectionExpression: 'sk',
        ConsistentRead: true,
        Limit: run.pageSize,
      }),
    );
    const names = (page.Items ?? []).map((item) => item.sk as string);
    if (names.length === 0) break;
    for (const name of names) {
      progress.dimension ??= { name, part: 'postings', count: 0 };
      await sweepDimension(run, progress.dimension);
      progress.after = name;
      progress.dimension = undefined;
      await run.save();
    }
    if (!page.LastEvaluatedKey) break;
  }
}

/**
 * One dimension of the sweep: its postings (checked against their entities, counted), then its blocks (kept to
 * the keys of entities they hold), then its sorted postings, each part from where a run that stopped left it.
 */
async function sweepDimension<E>(run: ReindexRun<E>, dimension: DimensionProgress): Promise<void> {
  const { name } = dimension;
  // A dimension whose postings this run read from the first in at most a page: the packed keys of the entities
  // it lists, whole (its blocks are then checked against them, an entity read only for a key they do not name).
  let listed: Set<string> | undefined;

  if (dimension.part === 'postings') {
    listed = await sweepPostings(run, dimension);
    await foldCounter(run, dimension);
    Object.assign(dimension, { part: 'blocks', after: undefined });
    await run.save();
  }

  if (dimension.part === 'blocks') {
    // `all` has no block partition; a queue's blocks, written by earlier releases, are all deleted (hasBlocks).
    if (name !== ALL) await sweepBlocks(run, dimension, listed);
    Object.assign(dimension, { part: 'sorted', after: undefined });
    await run.save();
  }

  // Sorted postings are kept in `all`, each bounded dimension that keeps postings and each queue that lists its
  // parts (Index.isSortedDimension); a bounded dimension listed by its queue may still hold an earlier release's.
  if (!run.index.isStatsDimension(name) || (isQueueDimension(name) && !run.index.isSortedDimension(name)))
    return;
  await sweepSorted(run, dimension);
}
