import { createHash } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { idempotencyKeys } from '#lib/data/keys.ts';
import { dynamo, tableName } from '#lib/data/store/client.ts';
import { isConditionFailure } from '#lib/data/store/errors.ts';

/**
 * Ends the lease of an Idempotency-Key's claim whose holder is gone (a faulted request that answered, its release
 * failed too), as the lease's running out would IDEMPOTENCY_LEASE_MS later (the function timeout, 10 s). For fault
 * sweeps whose point is what the retry finds, not the lease's length: they would otherwise wait 10 s a round. The
 * lease itself is waited out for real in test/system/sweeps/messages-faults.test.ts. A key with no running claim is left
 * as it is.
 */
export async function endClaim(accountId: string, key: string): Promise<void> {
  const keyHash = createHash('sha256').update(key).digest('hex');
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: idempotencyKeys.record(accountId, keyHash),
        UpdateExpression: 'SET lease_until = :gone',
        ConditionExpression: '#state = :running',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: { ':gone': 0, ':running': 'running' },
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
  }
}
