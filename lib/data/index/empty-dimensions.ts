import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { contacts } from '../contacts/contact-index.ts';
import { deals } from '../deals/deal-index.ts';
import { deleteEmptyDimension } from '../erasures.ts';
import { erasureKeys } from '../keys.ts';
import { batchDeleteAll, batchPutAll, dynamo, tableName } from '../store/client.ts';
import { tickets } from '../tickets/ticket-index.ts';
import { isKeyedDimension } from './dimensions.ts';
import type { Index } from './items.ts';

/**
 * What a keyed dimension (an address, a custom field's value: lib/data/index/dimensions.ts, isKeyedDimension)
 * leaves once no entity is in it: its counter shards at 0, its emptied blocks, its directory entry. Their keys
 * hold only the value's keyed hash, but they are derived from what a person wrote, and nothing else would ever
 * delete them: the purge deletes them with the last object in them, an erasure with the last object it took out
 * of them (docs/data-model.md, "Erasures").
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

const indexes = new Map<string, Index<unknown>>(
  [tickets, deals, contacts].map((e) => [e.index.declaration.entity, e.index as Index<unknown>]),
);

/**
 * An erasure's rewrite of an object (before → after) takes it out of the keyed dimensions the person's values
 * named: noted beside the erasure (`<id>#LEFT#<entity>#<dimension>`, erasureKeys.left) before the rewrite's
 * commit, so that a job stopped after the commit still knows them (the object no longer says what it held).
 * Answers how many it noted.
 */
export async function noteLeftDimensions<E>(
  index: Index<E>,
  accountId: string,
  erasureId: string,
  before: E,
  after: E,
): Promise<number> {
  const staying = new Set(index.dimensionsOf(accountId, after));
  const left = index
    .dimensionsOf(accountId, before)
    .filter((d) => !staying.has(d) && isKeyedDimension(index.declaration, d));
  const entity = index.declaration.entity;
  await batchPutAll(
    left.map((d) => ({ ...erasureKeys.left(accountId, erasureId, entity, d), type: 'erasure_left' })),
  );
  return left.length;
}

/**
 * A page of the noted dimensions (at most `limit`): what each leaves once empty deleted (one another object
 * is in still keeps), then its note. Answers the items deleted and whether notes remain.
 */
export async function clearLeftDimensions(
  accountId: string,
  erasureId: string,
  limit: number,
): Promise<{ removed: number; more: boolean }> {
  const prefix = erasureKeys.leftPrefix(erasureId);
  const { Items = [] } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': erasureKeys.partition(accountId), ':prefix': prefix },
      ProjectionExpression: 'pk, sk',
      ConsistentRead: true,
      Limit: limit,
    }),
  );
  const byEntity = new Map<string, string[]>();
  for (const item of Items) {
    const rest = String(item.sk).slice(prefix.length);
    const entity = rest.slice(0, rest.indexOf('#'));
    byEntity.set(entity, [...(byEntity.get(entity) ?? []), rest.slice(entity.length + 1)]);
  }
  let removed = 0;
  for (const [entity, dims] of byEntity) {
    const index = indexes.get(entity);
    if (index) removed += await deleteEmptyDimensions(index, accountId, dims);
  }
  await batchDeleteAll(Items.map((i) => ({ pk: i.pk, sk: i.sk })));
  return { removed, more: Items.length === limit };
}
