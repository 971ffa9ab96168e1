import { randomBytes } from 'node:crypto';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { orderKeys } from '../keys.ts';
import { batchDeleteAll, batchPutAll, dynamo, queryAll, tableName } from '../store/client.ts';
import { isTransactionCanceled, retryOnConflict } from '../store/errors.ts';
import { ATTR, chunks } from '../store/items.ts';
import { table } from '../store/table.ts';
import type { CommitAction } from '../store/transact.ts';
import { addToBlock } from './additions.ts';
import type { BlockEntry, Index } from './items.ts';
import { unpackOrderKey } from './order-key.ts';

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
 * Its block keys are added before the commit too, to each block's set `p` (ATTR.pendingBlockKeys), which carries no
 * id a key: the pending item holds the create's creation time (`c`), which its packed order key carries, so a key of
 * `p` is unsure while a pending item of its creation time is there (`createdMark`), and trusted once none is.
 * Items marked `1` (a commit past DynamoDB's 100 actions, a deletion's removals: additions.ts) are checked always.
 */

/** A create's pending id, put before its marked items; `spent` once a write used it (a retry writes in its commit). */
export interface Pending {
  id: string;
  /** Its item's key. */
  key: { pk: string; sk: string };
  spent: boolean;
}

/** Puts a create's pending item (plain, ~110 bytes: 1 write unit). */
export async function putPending<E>(index: Index<E>, accountId: string, createdUs: number): Promise<Pending> {
  const id = randomBytes(9).toString('base64url');
  const key = index.keys.pending(accountId, id);
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...key, type: `${index.types.entity}_pending`, at: nowMillis(), c: createdUs },
    }),
  );
  return { id, key, spent: false };
}

/** What a create writes before its commit with its pending item: new index items, and its block keys. */
export interface PendingWrites {
  pending: Pending;
  items: Record<string, unknown>[];
  blocks: BlockEntry[];
}

/** The mark of a block key in `p` (one packed order key): its creation time, as pendingIds names a pending item's. */
export const blockKeyMark = (packed: string): string => orderKeyMark(unpackOrderKey(packed));
export const orderKeyMark = (orderKey: string): string =>
  createdMark(orderKeys.parts(orderKey).createdMicros);
const createdMark = (createdUs: unknown) => `@${createdUs}`;

/** The commit's deletion of the pending item: in the transaction, so that it is gone exactly when the create is. */
export function pendingDeleted(pending: Pending): CommitAction {
  return { what: 'pending', action: { Delete: { TableName: tableName(), Key: pending.key } } };
}

/**
 * The account's pending ids (creates under way, and those that failed after writing marked items), and the
 * creation time of each (`createdMark`: what a pending block key is looked up by).
 */
export async function pendingIds<E>(index: Index<E>, accountId: string): Promise<Set<string>> {
  return pendingMarksOf(await pendingItems(index, accountId));
}

/** The marks of pending items as read (their ids and creation times): what a pending mark or `p` key is looked up in. */
export const pendingMarksOf = (items: Record<string, unknown>[]) =>
  new Set(
    items.flatMap((item) => [item.sk as string, ...(item.c === undefined ? [] : [createdMark(item.c)])]),
  );

const pendingItems = <E>(index: Index<E>, accountId: string) =>
  queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': index.keys.pendingPartition(accountId) },
    ProjectionExpression: 'pk, sk, #at, c, #expires',
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
  const underWay = await createsUnderWay(index, accountId);
  return new Set(
    marked.filter((item) => underWay.has(item[ATTR.unconfirmed] as string)).map((i) => String(i.sk)),
  );
}

/** The ids and creation times (`createdMark`) of the creates that may still land (pending items under SETTLED_MS). */
export async function createsUnderWay<E>(index: Index<E>, accountId: string): Promise<Set<string>> {
  const settledBefore = nowMillis() - SETTLED_MS;
  return pendingMarksOf(
    (await pendingItems(index, accountId)).filter((item) => !(Number(item.at) <= settledBefore)),
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

/**
 * The marked items a create writes before its commit, and its block keys (an update each, beside them: a block
 * an update's commit holds refuses it for a moment, retried as a commit is).
 */
export async function putMarked({ pending, items, blocks }: PendingWrites): Promise<void> {
  pending.spent = true;
  const marked = items.map((item) => ({ ...item, [ATTR.unconfirmed]: pending.id }));
  // Batches of 25 side by side: one round trip for a heavy ticket's ~90 too.
  await Promise.all([
    ...chunks(marked, 25).map((batch) => batchPutAll(batch)),
    ...blocks.map((b) => retryOnConflict(() => dynamo.send(new UpdateCommand(addToBlock(b, 'pending'))))),
  ]);
}

/**
 * After a commit that failed: when it surely did not land (DynamoDB cancelled it), its marked items are deleted
 * and its pending item expires a day later; otherwise (a timeout: it may have landed) both are left, and readers
 * go on checking the items against their entity. Best effort: a failure here leaves them so too.
 */
export async function abandonMarked(
  { pending, items, blocks }: PendingWrites,
  error: unknown,
): Promise<void> {
  if (!isTransactionCanceled(error) || items.length + blocks.length === 0) return;
  try {
    await Promise.all([
      items.length > 0 ? batchDeleteAll(items.map((item) => ({ pk: item.pk, sk: item.sk }))) : undefined,
      ...blocks.map((b) => retryOnConflict(() => dynamo.send(new UpdateCommand(removeFromPending(b))))),
    ]);
    await expire(pending.key);
  } catch {
    // Left as they are: readers check them against their entity.
  }
}
const PENDING_KEPT_SECONDS = 24 * 60 * 60;

/** Takes a create's block key out of `p` (only there: a later commit's key in `k` is another write's). */
const removeFromPending = (entry: BlockEntry) => ({
  TableName: tableName(),
  Key: entry.key,
  UpdateExpression: 'DELETE #p :key',
  ExpressionAttributeNames: { '#p': ATTR.pendingBlockKeys },
  ExpressionAttributeValues: { ':key': new Set([entry.packed]) },
});

/** A pending item no write will use (a create that failed before its commit was planned). */
export async function dropPending(pending: Pending): Promise<void> {
  if (pending.spent) return;
  pending.spent = true;
  await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: pending.key })).catch(() => undefined);
}
