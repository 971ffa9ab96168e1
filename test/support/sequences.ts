import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { accountKeys } from '#lib/data/keys.ts';
import { dynamo, tableName } from '#lib/data/store/client.ts';

/**
 * The account's id counters (ticket numbers, contact ids...): a rejected request must leave them as they were.
 * The same item holds the rate window (`rate0`, `rate1`), which counts every request, refused ones too.
 */
export async function sequencesOf(accountId: string): Promise<Record<string, unknown>> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: tableName(), Key: accountKeys.sequences(accountId), ConsistentRead: true }),
  );
  return Object.fromEntries(Object.entries(Item ?? {}).filter(([name]) => !/^rate\d$/.test(name)));
}
