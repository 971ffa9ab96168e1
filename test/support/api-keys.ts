import { queryAll, tableName } from '#lib/data/client.ts';
import { apiKeyKeys } from '#lib/data/keys.ts';
import { setClockForTests } from '#lib/time.ts';

/**
 * Runs `work` with the service's clock `ms` ahead (lib/time.ts): expiry without waiting for it. The local
 * gateway's authorizer cache keeps its own time (Date.now), so an answer it cached stays cached.
 */
export async function later(ms: number, work: () => Promise<void>) {
  setClockForTests(() => Math.floor((performance.timeOrigin + performance.now()) * 1000) + ms * 1000);
  try {
    await work();
  } finally {
    setClockForTests();
  }
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
