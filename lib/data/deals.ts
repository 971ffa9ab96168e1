import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Contact } from '#lib/accounts/types.ts';
import type { Deal } from '#lib/deals/types.ts';
import { dynamo, tableName } from './client.ts';
import { contactItem } from './contacts.ts';
import { type CommitAttachment, completionCommit } from './idempotency.ts';
import { entityOf } from './items.ts';
import { dealKeys } from './keys.ts';
import { type CommitAction, commit } from './transact.ts';

const dealAction = (accountId: string, deal: Deal): CommitAction => ({
  what: 'deal',
  action: {
    Put: {
      TableName: tableName(),
      Item: { ...dealKeys.deal(accountId, deal.uuid), type: 'deal', ...deal },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  },
});

/** Puts a new deal (with its attachment, the kept answer of an Idempotency-Key, in one transaction). */
export async function putDeal(accountId: string, deal: Deal, attachment?: CommitAttachment): Promise<void> {
  const put = dealAction(accountId, deal);
  if (!attachment) {
    await dynamo.send(new PutCommand(put.action.Put as NonNullable<CommitAction['action']['Put']>));
    return;
  }
  await commit([put, ...completionCommit(attachment)]);
}

/** A concurrent request created the contact first: the winner, read from the cancelled transaction. */
class ContactTaken extends Error {
  constructor(readonly existing: Contact) {
    super('A contact with this e-mail was created concurrently');
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
    await commit([
      {
        what: 'contact',
        action: {
          Put: {
            TableName: tableName(),
            Item: contactItem(accountId, contact),
            ConditionExpression: 'attribute_not_exists(pk)',
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          },
        },
        refused: (held) => held && new ContactTaken(entityOf<Contact>(held)),
      },
      dealAction(accountId, deal),
      ...completionCommit(attachment),
    ]);
    return { created: true };
  } catch (error) {
    if (error instanceof ContactTaken) return { created: false, existing: error.existing };
    throw error;
  }
}
