import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { contacts } from '../contacts/contact-index.ts';
import { filterDimensions } from '../index/dimensions.ts';
import { forgetDirectoryEntry } from '../index/directory.ts';
import { dynamo, getItem, queryAll, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import type { ItemKey } from '../store/items.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { dimension, tickets } from '../tickets/ticket-index.ts';

/**
 * Deletes what a keyed dimension (an address, a custom field's value) leaves once no entity is in it (counter
 * shards at 0, emptied blocks, its directory entry): the counter shards and the entry in one transaction, each on the condition that it still
 * holds what was read (a create entering the dimension meanwhile cancels it: the next pass reads again); a block
 * only if empty.
 * Answers how many items went.
 */
export async function deleteEmptyDimension(
  postingPartition: string,
  blockPartition: string,
  directoryEntry: ItemKey,
  isCounter: (sk: string) => boolean,
): Promise<number> {
  // The entry first: a write entering the dimension after this read puts it again (a new `w`), and one before
  // it left a posting, read next.
  const entry = await getItem({ ...directoryEntry });
  const postings = await partitionItems(postingPartition);
  if (postings.some((p) => !isCounter(String(p.sk)))) return 0;
  const deletes: CommitAction[] = postings.map((p) => ({
    what: 'counter',
    action: {
      Delete: {
        TableName: tableName(),
        Key: { pk: p.pk, sk: p.sk },
        ConditionExpression: 'n = :n',
        ExpressionAttributeValues: { ':n': p.n ?? 0 },
      },
    },
  }));
  if (entry) {
    deletes.push({
      what: 'directory entry',
      action: {
        Delete: {
          TableName: tableName(),
          Key: { ...directoryEntry },
          ...(entry.w === undefined
            ? { ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(w)' }
            : { ConditionExpression: 'w = :w', ExpressionAttributeValues: { ':w': entry.w } }),
        },
      },
    });
  }
  // One commit: the counters and the entry go together, or none does (a racing write cancels it; the next pass
  // reads again and finds its posting). This container's next write there puts the entry again.
  if (deletes.length) await commit(deletes);
  if (entry) forgetDirectoryEntry(directoryEntry);
  let removed = deletes.length;
  for (const block of await partitionItems(blockPartition)) {
    try {
      await dynamo.send(
        new DeleteCommand({
          TableName: tableName(),
          Key: { pk: block.pk, sk: block.sk },
          ConditionExpression:
            'attribute_not_exists(k) AND attribute_not_exists(u) AND attribute_not_exists(p)',
        }),
      );
      removed++;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }
  return removed;
}

/** Every item of a partition (keys and what the job needs to decide): bounded partitions only. */
async function partitionItems(pk: string): Promise<Record<string, unknown>[]> {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ConsistentRead: true,
  });
}

/**
 * What an address's own dimensions leave once empty (deleteEmptyDimension): its tickets' (the requester's
 * `email#<hash>`), then its contact's. Answers how many items went.
 */
export async function deleteAddressDimensions(accountId: string, email: string): Promise<number> {
  let removed = 0;
  for (const [engine, dim] of [
    [tickets, dimension.email(accountId, email)],
    [contacts, filterDimensions(contacts.index.declaration, accountId, { email })[0] as string],
  ] as const) {
    const keys = engine.index.keys;
    removed += await deleteEmptyDimension(
      keys.postingPartition(accountId, dim),
      keys.blockPartition(accountId, dim),
      keys.directoryEntry(accountId, dim),
      keys.isCounterSort,
    );
  }
  return removed;
}
