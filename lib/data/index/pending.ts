import { randomBytes } from 'node:crypto';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { batchDeleteAll, batchPutAll, dynamo, queryAll, tableName } from '../store/client.ts';
import { isTransactionCanceled } from '../store/errors.ts';
import { ATTR, chunks } from '../store/items.ts';
import { table } from '../store/table.ts';
import type { CommitAction } from '../store/transact.ts';
import type { Index } from './items.ts';

/**
 * A create's new index items written before its commit, at half their units (issue 40): outside a transaction a
 * small item costs 1 write unit, inside it 2. Its search terms and the postings of its unbounded values (an e-mail
 * address, a custom field's value) are each a new item that only reads meet, so they can be put first, marked with
 * the create's pending id (`u`), if a reader can tell whether that create committed without reading the entity:
 * - before them, the create puts a pending item (`<ENTITY>_PENDING#<acc>` / its id; beside its number, no round
 *   trip more); its commit deletes it. A pending item that is gone is a create that committed;
 * - a reader meeting a marked item reads the account's pending items after it read the marked one (one small
 *   Query): a mark whose pending item is gone is trusted as if written in the commit, one whose pending item is
 *   there is checked against its entity (order-key-reads.ts, confirmed), as every marked item was before;
 * - a create that fails after putting them leaves its pending item (a reader keeps checking its items against the
 *   entity that is not there) and, when its commit surely did not land, deletes the items and lets the pending
 *   item expire a day later, long after any reader that met one of them has finished.
 * Items marked `1` (a commit past DynamoDB's 100 actions, a deletion's removals: additions.ts) are checked always.
 */

/** A create's pending id, put before its marked items; `spent` once a write used it (a retry writes in its commit). */
export interface Pending {
  id: string;
  /** Its item's key. */
  key: { pk: string; sk: string };
  spent: boolean;
}

/** Puts a create's pending item (plain, ~90 bytes: 1 write unit). */
export async function putPending<E>(index: Index<E>, accountId: string): Promise<Pending> {
  const id = randomBytes(9).toString('base64url');
  const key = index.keys.pending(accountId, id);
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...key, type: `${index.types.entity}_pending`, at: nowMillis() },
    }),
  );
  return { id, key, spent: false };
}

/** The commit's deletion of the pending item: in the transaction, so that it is gone exactly when the create is. */
export function pendingDeleted(pending: Pending): CommitAction {
  return { what: 'pending', action: { Delete: { TableName: tableName(), Key: pending.key } } };
}

/** The account's pending ids (creates under way, and those that failed after writing marked items). */
export async function pendingIds<E>(index: Index<E>, accountId: string): Promise<Set<string>> {
  return new Set((await pendingItems(index, accountId)).map((item) => item.sk as string));
}

const pendingItems = <E>(index: Index<E>, accountId: string) =>
  queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': index.keys.pendingPartition(accountId) },
    ProjectionExpression: 'pk, sk, #at, #expires',
    ExpressionAttributeNames: { '#at': 'at', '#expires': table.ttlAttribute },
    ConsistentRead: true,
  });

/**
 * How long a create may run: one whose pending item is older than this has ended (a request's deadline is seconds,
 * a function's timeout under a minute), and its items, if its ticket is not there, never will be listed.
 */
const SETTLED_MS = 15 * 60 * 1000;

/**
 * The sort keys of these items (read just before) marked with a pending id whose pending item is still there: a
 * create under way, or one that failed. A sweep keeps them (their entity may not exist yet); readers check them.
 */
export async function stillPending<E>(
  index: Index<E>,
  accountId: string,
  items: Record<string, unknown>[],
): Promise<Set<string>> {
  const marked = items.filter((item) => typeof item[ATTR.unconfirmed] === 'string');
  if (marked.length === 0) return new Set();
  const settledBefore = nowMillis() - SETTLED_MS;
  const underWay = new Set(
    (await pendingItems(index, accountId))
      .filter((item) => !(Number(item.at) <= settledBefore))
      .map((item) => item.sk as string),
  );
  return new Set(
    marked.filter((item) => underWay.has(item[ATTR.unconfirmed] as string)).map((i) => String(i.sk)),
  );
}

function expire(key: { pk: string; sk: string }) {
  return dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: key,
      UpdateExpression: 'SET #expires = :expires',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#expires': table.ttlAttribute },
      ExpressionAttributeValues: { ':expires': Math.floor(nowMillis() / 1000) + PENDING_KEPT_SECONDS },
    }),
  );
}

/** The marked items a create writes before its commit. */
export async function putMarked(pending: Pending, items: Record<string, unknown>[]): Promise<void> {
  pending.spent = true;
  const marked = items.map((item) => ({ ...item, [ATTR.unconfirmed]: pending.id }));
  // Batches of 25 side by side: one round trip for a heavy ticket's ~90 too.
  await Promise.all(chunks(marked, 25).map((batch) => batchPutAll(batch)));
}

/**
 * After a commit that failed: when it surely did not land (DynamoDB cancelled it), its marked items are deleted
 * and its pending item expires a day later; otherwise (a timeout: it may have landed) both are left, and readers
 * go on checking the items against their entity. Best effort: a failure here leaves them so too.
 */
export async function abandonMarked(
  pending: Pending,
  items: Record<string, unknown>[],
  error: unknown,
): Promise<void> {
  if (!isTransactionCanceled(error) || items.length === 0) return;
  try {
    await batchDeleteAll(items.map((item) => ({ pk: item.pk, sk: item.sk })));
    await expire(pending.key);
  } catch {
    // Left as they are: readers check them against their entity.
  }
}
const PENDING_KEPT_SECONDS = 24 * 60 * 60;

/** A pending item no write will use (a create that failed before its commit was planned). */
export async function dropPending(pending: Pending): Promise<void> {
  if (pending.spent) return;
  pending.spent = true;
  await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: pending.key })).catch(() => undefined);
}
