import type { Contact } from '#lib/accounts/types.ts';
import { nowMicros } from '#lib/time.ts';
import type { EventDraft, ReservedPlaces } from '../events.ts';
import { newOrderedUuid } from '../index/order-key.ts';
import { storedOf } from '../index/reads.ts';
import { writePlan } from '../index/write-plan.ts';
import { contactKeys } from '../keys.ts';
import { batchGetAll, getItem, tableName } from '../store/client.ts';
import { entityOf, type Versioned } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import { contactDimension, contactItemKey, contacts } from './contact-index.ts';

/**
 * Contacts in the store: the contact item kept by the index engine (lib/data/contacts/contact-index.ts), and its e-mail
 * item, which holds a copy of the contact and is the unique constraint of its e-mail (one per account, compared
 * lower-cased). Both are written in one transaction, so they never disagree.
 */

/** A new contact's uuid: its creation time and id (from which its item's key follows). */
export const newContactUuid = (id: number, createdUs = nowMicros()) => newOrderedUuid(createdUs, id);

/** The e-mail is another contact's: nothing was written. The holder, as its e-mail item had it. */
export class ContactTaken extends Error {
  constructor(readonly existing: Contact) {
    super('Another contact has this e-mail');
  }
}

/** A contact's e-mail item: the uniqueness constraint and the lookup in one. */
export function contactItem(accountId: string, contact: Contact): Record<string, unknown> {
  return { ...contactKeys.byEmail(accountId, contact.email), type: 'contact', ...contact };
}

/** Takes the contact's e-mail: refused (ContactTaken) when another contact holds it. */
export function takeEmail(accountId: string, contact: Contact): CommitAction {
  return {
    what: 'contact_email',
    action: {
      Put: {
        TableName: tableName(),
        Item: contactItem(accountId, contact),
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => held && new ContactTaken(entityOf<Contact>(held)),
  };
}

/** Rewrites the copy in the contact's own e-mail item (it still holds this contact). */
function refreshEmail(accountId: string, contact: Contact): CommitAction {
  return {
    what: 'contact_email',
    action: {
      Put: {
        TableName: tableName(),
        Item: contactItem(accountId, contact),
        ConditionExpression: 'attribute_not_exists(pk) OR id = :id',
        ExpressionAttributeValues: { ':id': contact.id },
      },
    },
  };
}

/** Gives up the contact's old e-mail (it still holds this contact). */
export function releaseEmail(accountId: string, contact: Contact): CommitAction {
  return {
    what: 'contact_old_email',
    action: {
      Delete: {
        TableName: tableName(),
        Key: contactKeys.byEmail(accountId, contact.email),
        ConditionExpression: 'id = :id',
        ExpressionAttributeValues: { ':id': contact.id },
      },
    },
  };
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

/** A new contact's write plan: the contact and its index, and its e-mail taken (ContactTaken when held). */
export const planNewContact = (
  accountId: string,
  contact: Contact,
  attach: CommitAction[] = [],
  events: EventDraft[] = [],
  reserved?: ReservedPlaces,
) =>
  contacts.planCreate(accountId, contact, {
    attach: [takeEmail(accountId, contact), ...attach],
    events,
    reserved,
  });

/**
 * Creates a contact unless one with its e-mail already exists in the account; returns the stored one.
 * The e-mail item is the uniqueness constraint, so concurrent creators agree on a single contact.
 */
export async function createContact(
  accountId: string,
  contact: Contact,
  event: EventDraft,
): Promise<Contact> {
  try {
    await writePlan(planNewContact(accountId, contact, [], [event]));
    return contact;
  } catch (error) {
    if (error instanceof ContactTaken) return error.existing;
    throw error;
  }
}

/**
 * Writes a contact's change, guarded by the version read, with its e-mail item: moved when the e-mail changes
 * (ContactTaken when another contact holds the new one), refreshed otherwise. Answers the new version.
 */
export async function updateContact(
  accountId: string,
  change: { before: Contact; after: Contact; version: number },
  options: { attach?: CommitAction[] | undefined; event: EventDraft },
): Promise<number> {
  const { before, after } = change;
  const moved = before.email.toLowerCase() !== after.email.toLowerCase();
  const email = moved
    ? [releaseEmail(accountId, before), takeEmail(accountId, after)]
    : [refreshEmail(accountId, after)];
  return contacts.update(accountId, change, {
    attach: [...email, ...(options.attach ?? [])],
    events: [options.event],
  });
}

/**
 * Writes a contact an account file describes: its change when it is stored, or the contact itself when it is
 * not (one from before contacts were indexed, known only by its e-mail item).
 */
export async function saveContact(
  accountId: string,
  contact: Contact,
  eventOf: (before: Contact | undefined, version: number) => EventDraft,
): Promise<void> {
  const stored = await getContactById(accountId, contact.id);
  if (stored) {
    const change = { before: stored.entity, after: contact, version: stored.version };
    await updateContact(accountId, change, { event: eventOf(stored.entity, stored.version + 1) });
    return;
  }
  await writePlan(
    contacts.planCreate(accountId, contact, {
      attach: [refreshEmail(accountId, contact)],
      events: [eventOf(undefined, 1)],
    }),
  );
}

export async function getContactByUuid(
  accountId: string,
  uuid: string,
): Promise<Versioned<Contact> | undefined> {
  return contacts.getByUuid(accountId, uuid);
}

export async function getContactById(accountId: string, id: number): Promise<Versioned<Contact> | undefined> {
  const [stored] = await getStoredContacts(accountId, [id]);
  return stored;
}

/** Contacts by id, as stored (one BatchGet), in no particular order. */
export async function getStoredContacts(accountId: string, ids: number[]): Promise<Versioned<Contact>[]> {
  const items = await batchGetAll([...new Set(ids)].map((id) => contactItemKey(accountId, id)));
  return items.map((item) => storedOf<Contact>(item));
}

/** A page of an organization's contacts, oldest first, each as stored (as organizationTickets, for contacts). */
export function organizationContacts(accountId: string, organizationId: number, limit: number) {
  return contacts.oldestListed(accountId, contactDimension.organization(organizationId), {
    after: null,
    limit,
  });
}

/** Deletes an organization's posting no contact holds (as dropOrganizationTicket). */
export function dropOrganizationContact(accountId: string, organizationId: number, at: string) {
  return contacts.dropPosting(accountId, contactDimension.organization(organizationId), at);
}
