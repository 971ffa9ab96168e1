import { QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, queryAll, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
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

/** A keys-only due index: its name, a shard's partition key and the sort key bound of what is due (gsi2sk < before). */
export interface DueIndexRead {
  indexName: string;
  partition: (shard: number) => string;
  before: string;
}

/** A due entry with its account (every due sort key is `<due ms>#<account>#…`). */
export interface DueEntry extends DueEntryKeys {
  accountId: string;
}

/**
 * Where a runner's reading of one due index stands in each shard: the key its next page starts after (absent: the
 * earliest). Kept by the runner from one pass to the next (in memory: a new run starts from the earliest).
 */
export type DueCursors = Map<number, Record<string, unknown>>;

/** Keys a runner reads per due shard and pass (dueWindow): ~200 bytes each, a fifth of DynamoDB's 1 MB page. */
export const DUE_WINDOW_PER_SHARD = 1_000;

/**
 * A pass's window of the due entries, for a runner that serves them by account (lib/fair-share.ts): in each shard
 * one page of at most `perShard` keys due before `due.before` (keys only, eventually consistent: one Query a shard,
 * all at once), starting after where the runner's last window in that shard ended (`cursors`, which this moves).
 * A backlog deeper than a page is so read a page further each pass, and an entry behind one account's burst is
 * in the window within depth / perShard passes of its due time, not after the burst is served (docs/sla.md, "Fair
 * shares"); a shard read to its end is read from its earliest again at the next pass. Earliest first; `more` when
 * some shard had more due than its page.
 */
export async function dueWindow(
  due: DueIndexRead,
  shards: readonly number[],
  cursors: DueCursors,
  perShard = DUE_WINDOW_PER_SHARD,
): Promise<{ entries: DueEntry[]; more: boolean }> {
  const pages = await Promise.all(shards.map((shard) => dueWindowPage(due, shard, cursors, perShard)));
  const entries = pages.flat().map((item) => {
    const gsi2sk = String(item.gsi2sk);
    return { gsi2sk, pk: String(item.pk), sk: String(item.sk), accountId: gsi2sk.split('#')[1] ?? '' };
  });
  entries.sort((a, b) => (a.gsi2sk < b.gsi2sk ? -1 : a.gsi2sk > b.gsi2sk ? 1 : 0));
  return { entries, more: shards.some((shard) => cursors.has(shard)) };
}

/** One shard's page of a window, from its cursor; a cursor past everything due starts again from the earliest. */
async function dueWindowPage(
  due: DueIndexRead,
  shard: number,
  cursors: DueCursors,
  perShard: number,
): Promise<Record<string, unknown>[]> {
  const read = (after: Record<string, unknown> | undefined) =>
    dynamo.send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: due.indexName,
        KeyConditionExpression: 'gsi2pk = :pk AND gsi2sk < :before',
        ExpressionAttributeValues: { ':pk': due.partition(shard), ':before': due.before },
        ProjectionExpression: 'gsi2pk, gsi2sk, pk, sk',
        Limit: perShard,
        ExclusiveStartKey: after,
      }),
    );
  const after = cursors.get(shard);
  let page = await read(after);
  // What was past the cursor has been served meanwhile: this pass reads from the earliest instead of nothing.
  if (after && (page.Items ?? []).length === 0) page = await read(undefined);
  if (page.LastEvaluatedKey) cursors.set(shard, page.LastEvaluatedKey);
  else cursors.delete(shard);
  return page.Items ?? [];
}

/** A due family's keys: its index, a shard's partition, the bound of what is due at a time, a sort key read back. */
export interface DueKeys<T> {
  dueIndex: string;
  duePartition: (shard: number) => string;
  dueBefore: (nowMs: number) => string;
  parseDue: (gsi2sk: string) => T;
}

/**
 * dueWindow of one due family, each entry read back from its sort key: the one reading of every runner's window
 * (breaches, purges, erasures, clearings, hand-backs, the queue's freed agents).
 */
export async function dueWindowOf<T>(
  keys: DueKeys<T>,
  nowMs: number,
  shards: readonly number[],
  cursors: DueCursors,
  perShard?: number,
): Promise<{ entries: T[]; more: boolean }> {
  const window = await dueWindow(
    { indexName: keys.dueIndex, partition: keys.duePartition, before: keys.dueBefore(nowMs) },
    shards,
    cursors,
    perShard,
  );
  return { entries: window.entries.map((entry) => keys.parseDue(entry.gsi2sk)), more: window.more };
}

/** dueWindow of an indexed entity's due entries (IndexDeclaration.due), read back as the entities they name. */
export function dueEntityWindow<E>(
  index: Index<E>,
  nowMs: number,
  shards: readonly number[],
  cursors: DueCursors,
  perShard?: number,
): Promise<{ entries: DueEntity[]; more: boolean }> {
  return dueWindowOf(index.keys, nowMs, shards, cursors, perShard);
}

/**
 * Moves the due entry of the item at `key` (a runner's step that failed, a piece of work not yet to be closed) to
 * `due`; an item gone meanwhile (its work finished) is left gone: nothing is written.
 */
export async function moveDueEntry(
  key: { pk: string; sk: string },
  due: { gsi2pk: string; gsi2sk: string },
): Promise<void> {
  await dynamo
    .send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'SET gsi2pk = :pk, gsi2sk = :sk',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':pk': due.gsi2pk, ':sk': due.gsi2sk },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionFailure(error)) throw error;
    });
}
