import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Timestamp } from '#lib/time.ts';
import { apiKeyKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';

/**
 * Records that a key was used, on its record only (the lookup item the authorizer reads is never written for
 * it): the condition makes every writer after the first within `notAfter` a no-op, so the record changes at most
 * once a minute per key however many containers miss the cache at once.
 */
export async function touchApiKey(accountId: string, keyId: string, at: Timestamp, notAfter: Timestamp) {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: apiKeyKeys.record(accountId, keyId),
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(lastUsedAt) OR lastUsedAt = :null OR lastUsedAt < :notAfter)',
        UpdateExpression: 'SET lastUsedAt = :at',
        ExpressionAttributeValues: { ':at': at, ':notAfter': notAfter, ':null': null },
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}
