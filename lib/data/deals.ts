import { PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Contact } from '#lib/accounts/types.ts';
import type { Deal } from '#lib/deals/types.ts';
import { dynamo, tableName } from './client.ts';
import { contactItem } from './contacts.ts';
import { entityOf } from './items.ts';
import { dealKeys } from './keys.ts';

const dealItem = (accountId: string, deal: Deal) => ({
  ...dealKeys.deal(accountId, deal.uuid),
  type: 'deal',
  ...deal,
});

export async function putDeal(accountId: string, deal: Deal): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: dealItem(accountId, deal),
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

/**
 * Creates a contact and its deal in one transaction. The contact's e-mail item is the unique constraint:
 * when a concurrent request created that contact first, nothing is written and the winner is returned
 * (from the cancelled transaction itself, no extra read), so the caller can attach the deal to it.
 */
export async function putContactWithDeal(
  accountId: string,
  contact: Contact,
  deal: Deal,
): Promise<{ created: true } | { created: false; existing: Contact }> {
  try {
    await dynamo.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: tableName(),
              Item: contactItem(accountId, contact),
              ConditionExpression: 'attribute_not_exists(pk)',
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            },
          },
          {
            Put: {
              TableName: tableName(),
              Item: dealItem(accountId, deal),
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
    return { created: true };
  } catch (error) {
    const reasons = (error as { CancellationReasons?: { Code?: string; Item?: Record<string, unknown> }[] })
      .CancellationReasons;
    const contactReason = reasons?.[0];
    if (contactReason?.Code === 'ConditionalCheckFailed' && contactReason.Item) {
      return { created: false, existing: entityOf<Contact>(unmarshall(contactReason.Item as never)) };
    }
    throw error;
  }
}
