import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from './client.ts';
import { reservedPlaces } from './events.ts';
import { accountKeys } from './keys.ts';
import { foldRate } from './rate-limit.ts';

/**
 * Takes the next ticket number, the place of its event in the feed and, for round-robin, the next cursor of the
 * candidate set, in one update of the account's sequences item. A number is never handed out twice; one is lost
 * only when the create fails after taking it.
 */
export async function reserveTicketNumber(accountId: string, roundRobinSet?: string) {
  const add = roundRobinSet ? 'ticket :one, event :one, #rr :one' : 'ticket :one, event :one';
  const names = roundRobinSet ? { '#rr': `rr:${roundRobinSet}` } : undefined;
  const values = { ':one': 1 };
  // The request's rate count rides on this update when it has not been counted yet: a create refused for its
  // rate takes no number, and costs no extra round trip (lib/data/rate-limit.ts).
  const Attributes = await foldRate(accountId, { add, names, values }, async () => {
    const output = await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: accountKeys.sequences(accountId),
        UpdateExpression: `ADD ${add}`,
        ...(names ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return output.Attributes ?? {};
  });
  return {
    number: Attributes?.ticket as number,
    place: reservedPlaces(Attributes?.event as number, 1),
    cursor: roundRobinSet ? (Attributes?.[`rr:${roundRobinSet}`] as number) : 0,
  };
}
