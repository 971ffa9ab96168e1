import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from './client.ts';
import { deleteEmptyDimension } from './erasures.ts';
import type { Index } from './index/items.ts';

/**
 * What a keyed dimension (an address, a custom field's value: lib/data/index/declaration.ts, isKeyedDimension)
 * leaves once no entity is in it: its counter shards at 0, its emptied blocks, its directory entry. Their keys
 * hold only the value's keyed hash, but they are derived from what a person wrote, and nothing else would ever
 * delete them: the purge deletes them with the last object in them (docs/data-model.md, "The trash").
 */

/** Dimensions checked at once (each one or two keys-only reads, and a commit when it is empty). */
const DIMENSIONS_AT_ONCE = 10;

/** What these dimensions leave once empty (lib/data/erasures.ts, deleteEmptyDimension); how many items went. */
export async function deleteEmptyDimensions<E>(
  index: Index<E>,
  accountId: string,
  dims: string[],
): Promise<number> {
  let removed = 0;
  const unique = [...new Set(dims)];
  for (let i = 0; i < unique.length; i += DIMENSIONS_AT_ONCE) {
    const done = await Promise.all(
      unique.slice(i, i + DIMENSIONS_AT_ONCE).map((dim) => deleteIfEmpty(index, accountId, dim)),
    );
    removed += done.reduce((a, b) => a + b, 0);
  }
  return removed;
}

async function deleteIfEmpty<E>(index: Index<E>, accountId: string, dim: string): Promise<number> {
  // The partition's highest item, one keys-only read: a posting (other objects in it; postings sort above the
  // counter shards, `#COUNT#…`) means nothing to do; a counter shard, that the dimension is empty. Nothing at
  // all: its counters and entry went in one commit already, and only a block that commit's caller did not get
  // to delete (a crash) can be left: one more keys-only read of the blocks.
  const last = async (pk: string, forward: boolean) =>
    (
      await dynamo.send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          ProjectionExpression: 'sk',
          ScanIndexForward: forward,
          Limit: 1,
        }),
      )
    ).Items?.[0]?.sk as string | undefined;
  const highest = await last(index.keys.postingPartition(accountId, dim), false);
  if (highest !== undefined && !index.keys.isCounterSort(highest)) return 0;
  if (highest === undefined && (await last(index.keys.blockPartition(accountId, dim), true)) === undefined) {
    return 0;
  }
  return deleteEmptyDimension(
    index.keys.postingPartition(accountId, dim),
    index.keys.blockPartition(accountId, dim),
    index.keys.directoryEntry(accountId, dim),
    index.keys.isCounterSort,
  );
}
