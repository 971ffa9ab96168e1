import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Contact } from '#lib/accounts/types.ts';
import type { Deal } from '#lib/deals/types.ts';
import { dynamo, tableName } from './client.ts';
import { contactItem } from './contacts.ts';
import { actionConditionFailed, itemOnConditionFailure } from './errors.ts';
import { type CommitAttachment, completionActions, idempotencyTakenOver } from './idempotency.ts';
import { entityOf } from './items.ts';
import { dealKeys } from './keys.ts';
import { transact } from './transact.ts';

const dealItem = (accountId: string, deal: Deal) => ({
  ...dealKeys.deal(accountId, deal.uuid),
  type: 'deal',
  ...deal,
});

/** Puts a new deal (with its attachment, the kept answer of an Idempotency-Key, in one transaction). */
export async function putDeal(accountId: string, deal: Deal, attachment?: CommitAttachment): Promise<void> {
  const put = {
    TableName: tableName(),
    Item: dealItem(accountId, deal),
    ConditionExpression: 'attribute_not_exists(pk)',
  };
  if (!attachment) {
    await dynamo.send(new PutCommand(put));
    return;
  }
  try {
    await transact([{ Put: put }, ...completionActions(attachment)]);
  } catch (error) {
    if (actionConditionFailed(error, 1)) throw idempotencyTakenOver();
    throw error;
  }
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
  attachment?: CommitAttachment,
): Promise<{ created: true } | { created: false; existing: Contact }> {
  try {
    await transact([
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
      ...completionActions(attachment),
    ]);
    return { created: true };
  } catch (error) {
    const winner = actionConditionFailed(error, 0) ? itemOnConditionFailure(error, 0) : undefined;
    if (winner) return { created: false, existing: entityOf<Contact>(winner) };
    if (attachment && actionConditionFailed(error, 2)) throw idempotencyTakenOver();
    throw error;
  }
}
