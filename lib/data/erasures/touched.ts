import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { erasureKeys } from '../keys.ts';
import { batchDeleteAll, dynamo, queryAll, tableName } from '../store/client.ts';

/**
 * The tickets and deals an erasure changed, an item each beside its record (`<id>#TOUCHED#<type>#<uuid>`: a
 * progress item holding them all would grow with the person's tickets, and every save would cost its size); the
 * completion reads them for `contact.erased` and deletes them after it.
 */
export async function markTouched(accountId: string, id: string, type: string, uuid: string): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...erasureKeys.touched(accountId, id, type, uuid),
        type: 'erasure_touched',
        object_type: type,
        uuid,
      },
    }),
  );
}

/** The next object an erasure changed after the one at `after` (its `at`; '' from the first), or undefined. */
export async function touchedAfter(
  accountId: string,
  id: string,
  after: string,
): Promise<{ at: string; uuid: string } | undefined> {
  const prefix = erasureKeys.touchedPrefix(id);
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: {
        ':pk': erasureKeys.partition(accountId),
        ':after': after < prefix ? prefix : after,
      },
      ProjectionExpression: 'sk, #uuid',
      ExpressionAttributeNames: { '#uuid': 'uuid' },
      Limit: 1,
      ConsistentRead: true,
    }),
  );
  const item = Items?.[0];
  return item && String(item.sk).startsWith(prefix)
    ? { at: String(item.sk), uuid: String(item.uuid) }
    : undefined;
}

export async function touchedObjects(
  accountId: string,
  id: string,
): Promise<Record<'ticket' | 'deal', string[]>> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: {
      ':pk': erasureKeys.partition(accountId),
      ':prefix': erasureKeys.touchedPrefix(id),
    },
    ConsistentRead: true,
  });
  const of = (type: string) => items.filter((i) => i.object_type === type).map((i) => String(i.uuid));
  return { ticket: of('ticket'), deal: of('deal') };
}

export async function forgetTouched(
  accountId: string,
  id: string,
  touched: Record<'ticket' | 'deal', string[]>,
): Promise<void> {
  await batchDeleteAll(
    Object.entries(touched).flatMap(([type, uuids]) =>
      uuids.map((uuid) => ({ ...erasureKeys.touched(accountId, id, type, uuid) })),
    ),
  );
}
