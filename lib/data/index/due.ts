import { queryAll, tableName } from '../store/client.ts';
import { DUE_SHARDS } from '../webhooks/due-shards.ts';
import type { Index } from './items.ts';

/** An entity whose due entry (IndexDeclaration.due) is at or before the time asked. */
export interface DueEntity {
  accountId: string;
  orderKey: string;
  dueMs: number;
}

export const ALL_DUE_SHARDS: readonly number[] = Array.from({ length: DUE_SHARDS }, (_, shard) => shard);

/**
 * Entities due at or before `nowMs`, earliest first, at most `limit`, in the due shards given (a runner of the
 * pool reads its own: due-shards.ts, shardsOfRunner): one Query per shard, all at once (one round trip), each
 * for its earliest `limit` keys (the keys-only index, eventually consistent: the runner reads each entity before
 * acting on it). Never a Scan: what is read is what is due.
 */
export async function dueEntities<E>(
  index: Index<E>,
  nowMs: number,
  limit: number,
  shards: readonly number[] = ALL_DUE_SHARDS,
): Promise<DueEntity[]> {
  const { keys } = index;
  const sortKeys = await dueSortKeys(
    { indexName: keys.dueIndex, partition: keys.duePartition, before: keys.dueBefore(nowMs) },
    limit,
    shards,
  );
  return sortKeys.map((sk) => keys.parseDue(sk));
}

/**
 * The earliest `limit` due sort keys below `before` over the given shards of a keys-only due index: one Query per
 * shard, all at once (one round trip). A sort key starts with its due time, zero-padded, so lexical order is due
 * order across partitions. The one reader of every gsi2 due index (SLA breaches, purges, the outbox).
 */
export async function dueSortKeys(
  due: { indexName: string; partition: (shard: number) => string; before: string },
  limit: number,
  shards: readonly number[],
): Promise<string[]> {
  return (await dueEntries(due, limit, shards)).map((entry) => entry.gsi2sk);
}

/** A due entry as the keys-only index holds it: its sort key and the table keys of the item it is on. */
export interface DueEntryKeys {
  gsi2sk: string;
  pk: string;
  sk: string;
}

/**
 * dueSortKeys with the table keys of each entry's item (a keys-only index projects them: no read of the item),
 * for entries whose sort key does not name their item (the outbox's: a message or an acknowledgement).
 */
export async function dueEntries(
  due: { indexName: string; partition: (shard: number) => string; before: string },
  limit: number,
  shards: readonly number[],
): Promise<DueEntryKeys[]> {
  const entries = (
    await Promise.all(
      shards.map((shard) =>
        queryAll(
          {
            TableName: tableName(),
            IndexName: due.indexName,
            KeyConditionExpression: 'gsi2pk = :pk AND gsi2sk < :before',
            ExpressionAttributeValues: { ':pk': due.partition(shard), ':before': due.before },
            ProjectionExpression: 'gsi2sk, pk, sk',
          },
          limit,
        ),
      ),
    )
  )
    .flat()
    .map((item) => ({ gsi2sk: String(item.gsi2sk), pk: String(item.pk), sk: String(item.sk) }));
  entries.sort((a, b) => (a.gsi2sk < b.gsi2sk ? -1 : a.gsi2sk > b.gsi2sk ? 1 : 0));
  return entries.slice(0, limit);
}
