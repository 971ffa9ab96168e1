import type { ApiKeyRecord } from '#lib/accounts/types.ts';
import type { Timestamp } from '#lib/time.ts';
import { apiKeyKeys } from '../keys.ts';
import { type CommitAttachment, completionCommit } from '../requests/idempotency.ts';
import { tableName } from '../store/client.ts';
import { commit } from '../store/transact.ts';

/**
 * Marks both items of a key revoked, in one transaction; revoking an already revoked key keeps its first
 * revocation time (and writes nothing).
 */
export async function revokeApiKey(
  record: ApiKeyRecord,
  at: Timestamp,
  attachment?: (revokedAt: Timestamp) => CommitAttachment | undefined,
): Promise<Timestamp> {
  if (record.revokedAt) return record.revokedAt;
  const update = { UpdateExpression: 'SET revokedAt = :at', ExpressionAttributeValues: { ':at': at } };
  await commit([
    {
      what: 'lookup',
      action: { Update: { TableName: tableName(), Key: apiKeyKeys.lookup(record.hash), ...update } },
    },
    {
      what: 'record',
      action: {
        Update: { TableName: tableName(), Key: apiKeyKeys.record(record.accountId, record.id), ...update },
      },
    },
    ...completionCommit(attachment?.(at)),
  ]);
  return at;
}
