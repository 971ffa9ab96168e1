import type { Contact } from '#lib/accounts/types.ts';
import type { Deal, DealFilter } from '#lib/deals/types.ts';
import { contactItemKey } from '../contacts/contact-index.ts';
import { getStoredContacts, planNewContact } from '../contacts/contacts.ts';
import type { EventDraft, ReservedPlaces } from '../events.ts';
import { combinePlans } from '../index/additions.ts';
import type { EntityChange } from '../index/commit.ts';
import { filterDimensions } from '../index/dimensions.ts';
import type { PageQuery } from '../index/list.ts';
import { newOrderedUuid, orderKeyOfUuid, uuidParts } from '../index/order-key.ts';
import { storedOf } from '../index/reads.ts';
import type { Stats } from '../index/stats-reads.ts';
import { writePlan } from '../index/write-plan.ts';
import { batchGetAll, tableName } from '../store/client.ts';
import { entityOf, type Versioned } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import { BOARD_FAMILIES, deals } from './deal-index.ts';

/**
 * Deals in the store, kept by the index engine (lib/data/deals/deal-index.ts). A deal's uuid carries its contact's
 * id, so a deal is read with its contact as it is now in one BatchGet.
 */

export { reserveDealIds } from '../tickets/sequences.ts';

/** A new deal's uuid: its creation time and number, and its contact's id in the free bits. */
export const newDealUuid = (createdUs: number, number: number, contactId: number) =>
  newOrderedUuid(createdUs, number, contactId);

/**
 * Writes a new deal and its index, and its new contact when it has one, in one transaction (ContactTaken when
 * a concurrent request took the contact's e-mail first: nothing was written). `attach` goes in the same commit.
 */
export async function insertDeal(
  accountId: string,
  deal: Deal,
  options: {
    newContact?: { contact: Contact; event: EventDraft; place: ReservedPlaces } | undefined;
    attach?: CommitAction[] | undefined;
    event: EventDraft;
    /** The event's place, taken with the deal's number. */
    place?: ReservedPlaces | undefined;
  },
): Promise<void> {
  const { newContact, event, place, attach } = options;
  // An existing contact must still be there at commit (a contact is deleted only while it has no deals: this
  // check and the deletion's checks of its deals counter meet in the same items).
  const contactThere: CommitAction[] = newContact
    ? []
    : [
        {
          what: 'deal_contact',
          action: {
            ConditionCheck: {
              TableName: tableName(),
              Key: contactItemKey(accountId, deal.contact.id),
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
          refused: () => new ContactGone(),
        },
      ];
  const plan = deals.planCreate(accountId, deal, {
    attach: [...contactThere, ...(attach ?? [])],
    events: [event],
    reserved: place,
  });
  await writePlan(
    newContact
      ? combinePlans(
          planNewContact(accountId, newContact.contact, [], [newContact.event], newContact.place),
          plan,
        )
      : plan,
  );
}

/** The deal's contact was deleted after it was read: nothing was written. */
export class ContactGone extends Error {
  constructor() {
    super("The deal's contact was deleted");
  }
}

/** A deal as stored, with its version, and its contact as it is now. */
export interface StoredDeal extends Versioned<Deal> {
  contact: Contact | undefined;
}

/** The deal a uuid names and its contact (one BatchGet: the uuid names both), or undefined. */
export async function getDeal(accountId: string, uuid: string): Promise<StoredDeal | undefined> {
  const orderKey = orderKeyOfUuid(uuid);
  const parts = uuidParts(uuid);
  if (!orderKey || !parts) return undefined;
  const dealKey = deals.index.keys.item(accountId, orderKey);
  const items = await batchGetAll([dealKey, contactItemKey(accountId, parts.tag)]);
  const dealItem = items.find((i) => i.pk === dealKey.pk && i.sk === dealKey.sk);
  const deal = dealItem && entityOf<Deal>(dealItem);
  if (!dealItem || !deal || deal.uuid !== uuid) return undefined;
  const contactItem = items.find((i) => i !== dealItem && i.id === deal.contact.id);
  // A contact id too large for the uuid's free bits: its contact is read by the deal's record.
  const contact = contactItem
    ? entityOf<Contact>(contactItem)
    : (await getStoredContacts(accountId, [deal.contact.id]))[0]?.entity;
  return { ...storedOf<Deal>(dealItem), contact };
}

/** Writes a deal's change guarded by the version read (StaleVersion otherwise); answers the new version. */
export async function updateDeal(
  accountId: string,
  change: EntityChange<Deal>,
  options: { attach?: CommitAction[] | undefined; event: EventDraft },
): Promise<number> {
  return deals.update(accountId, change, { attach: options.attach, events: [options.event] });
}

/** One page of deals, newest first, the exact total, and the page's contacts as they are now (by id). */
export async function findDealPage(accountId: string, query: PageQuery<DealFilter>) {
  const { total, entities } = await deals.findPage(accountId, query);
  const stored = await getStoredContacts(
    accountId,
    entities.map((d) => d.contact.id),
  );
  return { total, deals: entities, contacts: new Map(stored.map((c) => [c.entity.id, c.entity])) };
}

/** The board's counters (lib/data/deals/deal-index.ts, BOARD), summed over their cells' shards (one round trip). */
export async function getDealStats(accountId: string): Promise<Stats> {
  return deals.stats(accountId, BOARD_FAMILIES);
}

/** Open deals per contact (each contact's open queue counter, one BatchGet). */
export async function openDealCounts(accountId: string, contactIds: number[]): Promise<Map<number, number>> {
  const dimOf = (contactId: number) =>
    filterDimensions(deals.index.declaration, accountId, { contactId, status: 'open' })[0] as string;
  const counts = await deals.counts(accountId, contactIds.map(dimOf));
  return new Map(contactIds.map((id) => [id, counts[dimOf(id)] ?? 0]));
}
