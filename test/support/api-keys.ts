import { apiKeyKeys } from '#lib/data/keys.ts';
import { queryAll, tableName } from '#lib/data/store/client.ts';
import { nowMillis } from '#lib/time.ts';
import { atTime } from './clock.ts';

/**
 * Runs `work` with the service's clock `ms` ahead (test/support/clock.ts): expiry without waiting for it. The
 * local gateway's authorizer cache reads the same clock: an answer it cached within its TTL stays cached.
 */
export function later(ms: number, work: () => Promise<void>): Promise<void> {
  return atTime(nowMillis() + ms, work);
}

/**
 * Everything stored under an account's keys (records and the key-set guard), but the calling key's last use,
 * which the authorizer writes for any request, refused or not.
 */
export const keyItems = async (accountId: string) =>
  (
    await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': apiKeyKeys.accountPartition(accountId) },
      ConsistentRead: true,
    })
  ).map(({ lastUsedAt: _, ...item }) => item);
