import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { addressHash } from '../index/keyed.ts';
import { outboxKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';

/** Addresses that bounced: the account sends them nothing until they write in again. */

/** The suppression item of an address: by its keyed hash (docs/data-model.md), the address itself nowhere. */
export const suppressionKey = (accountId: string, address: string) =>
  outboxKeys.suppressed(accountId, addressHash(accountId, address));

/** Marks an address that bounced: the account sends it nothing more until it writes in again. */
export async function suppressAddress(accountId: string, address: string, reason: string): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...suppressionKey(accountId, address),
        type: 'email_suppressed',
        reason,
        at: nowMillis(),
      },
    }),
  );
}

/** Whether the account sends nothing to the address (one GetItem). */
export async function isSuppressed(accountId: string, address: string): Promise<boolean> {
  return (await getItem(suppressionKey(accountId, address))) !== undefined;
}

/**
 * The address wrote in again: the account may send to it again. One eventually consistent GetItem (0.5 read
 * unit; every received mail pays it), and a DeleteItem only when the address was suppressed.
 */
export async function liftSuppression(accountId: string, address: string): Promise<void> {
  if (!(await getItem(suppressionKey(accountId, address), { eventual: true }))) return;
  try {
    await dynamo.send(
      new DeleteCommand({
        TableName: tableName(),
        Key: suppressionKey(accountId, address),
        ConditionExpression: 'attribute_exists(pk)',
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}
