import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { emailKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';

/**
 * The account's addresses (docs/data-model.md, "Items"): each address an item naming the account it belongs to,
 * claimed when the account is applied and read to find which account a received mail is for.
 */

/** An address held by another account (apply refuses it). */
export class AddressTaken extends Error {
  constructor(readonly address: string) {
    super(`${address} belongs to another account`);
  }
}

/** The account an address belongs to (one GetItem), or undefined. */
export async function findAccountIdByAddress(address: string): Promise<string | undefined> {
  return (await getItem(emailKeys.address(address), { eventual: true }))?.accountId as string | undefined;
}

/**
 * Claims the addresses for the account, one conditional Put each (free, or already the account's): an address
 * of another account is an AddressTaken, and the addresses claimed before it stay the account's (re-applying
 * a fixed file claims the rest; none is ever taken from another).
 */
export async function claimAddresses(accountId: string, addresses: string[]): Promise<void> {
  for (const address of addresses) {
    try {
      await dynamo.send(
        new PutCommand({
          TableName: tableName(),
          Item: { ...emailKeys.address(address), type: 'email_address', accountId, address },
          ConditionExpression: 'attribute_not_exists(pk) OR accountId = :id',
          ExpressionAttributeValues: { ':id': accountId },
        }),
      );
    } catch (error) {
      if (isConditionFailure(error)) throw new AddressTaken(address);
      throw error;
    }
  }
}
