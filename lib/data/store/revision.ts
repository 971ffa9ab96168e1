import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from './client.ts';
import { isConditionFailure } from './errors.ts';

/**
 * Saves a runner's progress item at the revision it read (a hand-back, a moment sweep's lane): done (`fields`
 * null), the item is deleted; else `fields` are set and `rev` moves on by one. Either on `rev` as read, and on
 * `also` when given (a lane's sweep version). False when that condition fails: another run saved first, or the
 * item is gone or replaced, and that run (or the newer one) goes on.
 */
export async function saveAtRevision(save: {
  Key: Record<string, unknown>;
  rev: number;
  also?: { condition: string; values: Record<string, unknown> };
  fields: Record<string, unknown> | null;
}): Promise<boolean> {
  const guard = {
    ConditionExpression: save.also ? `${save.also.condition} AND rev = :rev` : 'rev = :rev',
    values: { ...save.also?.values, ':rev': save.rev },
  };
  const { Key, fields } = save;
  try {
    if (fields === null) {
      await dynamo.send(
        new DeleteCommand({
          TableName: tableName(),
          Key,
          ConditionExpression: guard.ConditionExpression,
          ExpressionAttributeValues: guard.values,
        }),
      );
    } else {
      const names = Object.keys(fields);
      await dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key,
          UpdateExpression: `SET ${names.map((_, i) => `#f${i} = :f${i}`).join(', ')}, rev = :next`,
          ConditionExpression: guard.ConditionExpression,
          ExpressionAttributeNames: Object.fromEntries(names.map((name, i) => [`#f${i}`, name])),
          ExpressionAttributeValues: {
            ...guard.values,
            ...Object.fromEntries(names.map((name, i) => [`:f${i}`, fields[name]])),
            ':next': save.rev + 1,
          },
        }),
      );
    }
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
