import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { messageKeys, objectRefKeys, personRefKeys, trashKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import type { ItemKey } from '../store/items.ts';

/**
 * Where the job finds a person's copies, never by a Scan: an object's references (the items holding a copy of
 * it), the person's own references (to the tickets and the mail of theirs that named them), a ticket's messages,
 * the account's trash; and a person's reference deleted once its ticket is done.
 */

/**
 * A reference: the item it is on (its keys), where it is in its partition (`ref`, its index sort key: a page
 * goes on after it), and what it names: `kind` (`event`, `idempotency`, `inbound`, `ticket`) and `id`.
 */
export type Ref = ItemKey & { ref: string; kind: string; id: string };

/** The items holding a copy of an object (its references, gsi2 keys only), after `after`, at most `limit`. */
export async function objectRefs(
  accountId: string,
  objectUuid: string,
  after: string | null,
  limit: number,
): Promise<Ref[]> {
  return refsPage(objectRefKeys.index, objectRefKeys.partition(accountId, objectUuid), after, limit);
}

/** A page of references (a keys-only index partition: each item's key and its index sort key, `ref`). */
async function refsPage(
  index: string,
  partition: string,
  after: string | null,
  limit: number,
): Promise<Ref[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: index,
      KeyConditionExpression: after === null ? 'gsi2pk = :pk' : 'gsi2pk = :pk AND gsi2sk > :after',
      ExpressionAttributeValues: { ':pk': partition, ...(after === null ? {} : { ':after': after }) },
      Limit: limit,
    }),
  );
  return (Items ?? []).map((i) => {
    const ref = String(i.gsi2sk);
    const at = ref.indexOf('#');
    return { pk: String(i.pk), sk: String(i.sk), ref, kind: ref.slice(0, at), id: ref.slice(at + 1) };
  });
}

/**
 * A page of a person's references (gsi2 `PERSON_REFS#<acc>#<hash>`, keys only) after `after`: ticket refs
 * (`ticket#<uuid>`, their own item) and inbound log entries (`inbound#<id>`, the entry), at most `limit`.
 */
export async function personRefs(
  accountId: string,
  hash: string,
  after: string | null,
  limit: number,
): Promise<Ref[]> {
  return refsPage(personRefKeys.index, personRefKeys.partition(accountId, hash), after, limit);
}

/** An item without its person reference (its gsi2 keys: a mail of theirs that opened no ticket), for its Put. */
export function withoutPersonRef(item: Record<string, unknown>): Record<string, unknown> {
  const { gsi2pk: _pk, gsi2sk: _sk, ...rest } = item;
  return rest;
}

/**
 * The token of a person's reference to a ticket (`w`, new with each Put): null for a reference written before
 * tokens (or none), read before the erasure reads the ticket's messages.
 */
export async function personRefToken(
  accountId: string,
  hash: string,
  ticketUuid: string,
): Promise<string | null> {
  const { pk, sk } = personRefKeys.ticket(accountId, hash, ticketUuid);
  const item = await getItem({ pk, sk });
  return typeof item?.w === 'string' ? item.w : null;
}

/**
 * Deletes a person's reference to a ticket (its object erased, or gone): with `token` (personRefToken's answer),
 * only if it is the reference read, so a mail of the person that wrote it again since keeps it (false: a later
 * erasure finds that mail by it); without, whatever it holds (a ticket no longer anywhere).
 */
export async function deletePersonRef(
  accountId: string,
  hash: string,
  ticketUuid: string,
  token?: string | null,
): Promise<boolean> {
  const { pk, sk } = personRefKeys.ticket(accountId, hash, ticketUuid);
  const condition =
    token === undefined
      ? {}
      : token === null
        ? { ConditionExpression: 'attribute_not_exists(w)' }
        : { ConditionExpression: 'w = :w', ExpressionAttributeValues: { ':w': token } };
  try {
    await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: { pk, sk }, ...condition }));
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** A page of a ticket's stored messages after `afterNumber` (items as stored, keys included). */
export async function messageItems(
  accountId: string,
  ticketUuid: string,
  afterNumber: number,
  limit: number,
): Promise<Record<string, unknown>[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: {
        ':pk': messageKeys.partition(accountId, ticketUuid),
        ':after': messageKeys.sort(afterNumber),
      },
      Limit: limit,
      ConsistentRead: true,
    }),
  );
  return Items ?? [];
}

/** A page of the account's trash of one type (gsi1, newest deletion first): keys and the object as deleted. */
export async function trashPage(
  accountId: string,
  type: string,
  after: string | null,
  limit: number,
): Promise<{ uuid: string; sortKey: string; object: unknown }[]> {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: trashKeys.listIndex,
      KeyConditionExpression: after === null ? 'gsi1pk = :pk' : 'gsi1pk = :pk AND gsi1sk < :after',
      ExpressionAttributeValues: {
        ':pk': trashKeys.listPartition(accountId, type),
        ...(after === null ? {} : { ':after': after }),
      },
      ScanIndexForward: false,
      Limit: limit,
    }),
  );
  return (Items ?? []).map((i) => ({ uuid: String(i.uuid), sortKey: String(i.gsi1sk), object: i.object }));
}
