import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Contact } from '#lib/accounts/types.ts';
import { batchGetAll, dynamo, getItem, tableName } from './client.ts';
import { isConditionFailure, itemOnConditionFailure } from './errors.ts';
import { entityOf } from './items.ts';
import { contactKeys } from './keys.ts';

/** A contact as stored: its e-mail item (the uniqueness constraint and the lookup in one). */
export function contactItem(accountId: string, contact: Contact): Record<string, unknown> {
  return { ...contactKeys.byEmail(accountId, contact.email), type: 'contact', ...contact };
}

export async function findContactByEmail(accountId: string, email: string): Promise<Contact | undefined> {
  const item = await getItem(contactKeys.byEmail(accountId, email));
  return item ? entityOf<Contact>(item) : undefined;
}

export async function findContactsByEmail(accountId: string, emails: string[]): Promise<Contact[]> {
  const unique = [...new Set(emails.map((e) => e.toLowerCase()))];
  const items = await batchGetAll(unique.map((email) => contactKeys.byEmail(accountId, email)));
  return items.map((item) => entityOf<Contact>(item));
}

/**
 * Creates a contact unless one with its e-mail already exists in the account; returns the stored one.
 * The e-mail item is the uniqueness constraint, so concurrent creators agree on a single contact.
 */
export async function createContact(accountId: string, contact: Contact): Promise<Contact> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: contactItem(accountId, contact),
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return contact;
  } catch (error) {
    const stored = isConditionFailure(error) ? itemOnConditionFailure(error) : undefined;
    if (stored) return entityOf<Contact>(stored);
    throw error;
  }
}

/** Replaces the stored fields of an existing contact, keeping its id and uuid. */
export async function updateContact(accountId: string, contact: Contact): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: contactItem(accountId, contact),
      ConditionExpression: 'id = :id',
      ExpressionAttributeValues: { ':id': contact.id },
    }),
  );
}
