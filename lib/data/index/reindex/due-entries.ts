import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from '../../store/client.ts';
import { isConditionFailure } from '../../store/errors.ts';
import { ATTR, type ItemKey } from '../../store/items.ts';

/** An entity item whose due entry (IndexDeclaration.due, on the item itself: gsi2) is not what its entity gives. */
export interface DueMove {
  key: ItemKey;
  version: unknown;
  entry: { gsi2pk: unknown; gsi2sk: unknown } | undefined;
}

/**
 * The due entry to write on a stored entity item, when it differs from the one its entity gives (an entity stored
 * before its declaration had a due time, or one that drifted): undefined when it is right.
 */
export function dueMoveOf(
  item: Record<string, unknown>,
  built: Record<string, unknown>,
): DueMove | undefined {
  if (item.gsi2pk === built.gsi2pk && item.gsi2sk === built.gsi2sk) return undefined;
  return {
    key: { pk: item.pk as string, sk: item.sk as string },
    version: item[ATTR.version],
    entry: built.gsi2pk === undefined ? undefined : { gsi2pk: built.gsi2pk, gsi2sk: built.gsi2sk },
  };
}

/**
 * Sets (or removes) an entity item's due entry, only those two attributes and only at the version read: an
 * entity changed since wrote its own entry in its commit, and is left as it is. Answers whether it wrote.
 */
export async function writeDueEntry(move: DueMove): Promise<boolean> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: move.key,
        UpdateExpression: move.entry ? 'SET gsi2pk = :pk, gsi2sk = :sk' : 'REMOVE gsi2pk, gsi2sk',
        ConditionExpression: move.version === undefined ? 'attribute_not_exists(#v)' : '#v = :v',
        ExpressionAttributeNames: { '#v': ATTR.version },
        ...(move.version === undefined && !move.entry
          ? {}
          : {
              ExpressionAttributeValues: {
                ...(move.version === undefined ? {} : { ':v': move.version }),
                ...(move.entry ? { ':pk': move.entry.gsi2pk, ':sk': move.entry.gsi2sk } : {}),
              },
            }),
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
