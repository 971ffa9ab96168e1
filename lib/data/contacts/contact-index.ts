import type { Contact } from '#lib/accounts/types.ts';
import { emailTerms, textWords, usefulTerms } from '#lib/search.ts';
import { filterDimensions } from '../index/dimensions.ts';
import { indexedEntity } from '../index/engine.ts';
import { uuidParts } from '../index/order-key.ts';
import { orderKeys } from '../keys.ts';

/** The contact list's filters. */
export interface ContactFilter {
  email?: string;
  organizationId?: number;
}

/**
 * How contacts are indexed (lib/data/index/): by e-mail, and found by the words of their name and e-mail.
 * Contacts are ordered by id, their creation order, so a contact's item is found from its id alone: a deal,
 * which knows its contact's id, reads itself and its contact in one BatchGet. A contact's uuid carries its
 * creation time and id (lib/data/index/order-key.ts).
 */
export const contacts = indexedEntity<Contact, ContactFilter>({
  entity: 'CONTACT',
  order: (c) => ({ createdMicros: 0, number: c.id }),
  keyOfUuid: (uuid) => {
    const parts = uuidParts(uuid);
    return parts && orderKeys.of(0, parts.number);
  },
  // An address: named in keys by the account's keyed hash, its erasure hash (lib/data/index/keyed.ts).
  dimensions: [
    { name: 'email', values: (c) => [c.email.toLowerCase()], bounded: false },
    // Its organization's id (the service's own: readable in keys): what an organization's deletion clears.
    {
      name: 'organization',
      values: (c) => (c.organization ? [String(c.organization.id)] : []),
      bounded: false,
      readable: true,
    },
  ],
  search: (c) => ({
    prefixes: usefulTerms([...emailTerms(c.email), ...textWords(`${c.firstName} ${c.lastName ?? ''}`)]),
  }),
  filter: (f) => ({
    email: f.email ? [f.email.toLowerCase()] : [],
    organization: f.organizationId !== undefined ? [String(f.organizationId)] : [],
  }),
});

/** A contact dimension by name, as a filter names it (the clearing runner's). */
export const contactDimension = {
  organization: (organizationId: number) =>
    filterDimensions(contacts.index.declaration, '', { organizationId })[0] as string,
};

/** The key of a contact's item, from its id. */
export const contactItemKey = (accountId: string, id: number) =>
  contacts.index.keys.item(accountId, orderKeys.of(0, id));
