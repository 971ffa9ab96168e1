import { fullName } from '#lib/accounts/contact-name.ts';
import type { Contact } from '#lib/accounts/types.ts';
import { findContact } from '#lib/contacts/contacts.ts';
import { presentContact } from '#lib/contacts/present.ts';
import { getStoredContacts } from '#lib/data/contacts/contacts.ts';
import type { Versioned } from '#lib/data/store/items.ts';
import {
  type ContactDeals,
  type DeleteOptions,
  deleteContact,
  deleteDeal,
  deleteTicket,
  type TrashFacts,
  type TrashType,
} from '#lib/data/trash/trash.ts';
import { findDeal } from '#lib/deals/get-deal.ts';
import { presentDealDetail } from '#lib/deals/present.ts';
import type { Deal } from '#lib/deals/types.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import { freedByTicketChange } from '#lib/tickets/queue.ts';
import { freedItems } from '#lib/tickets/ruled-write.ts';
import type { Ticket } from '#lib/tickets/types.ts';

/** The three types that are deleted into the trash and restored from it, each as its deletion needs it. */

/** What each type's deletion needs: how it is found, shown, titled and deleted. */
export interface Deletable<E> {
  find(accountId: string, ref: string): Promise<Versioned<E> | undefined>;
  uuidOf(entity: E): string;
  title(entity: E): string;
  /** The object as its GET answers it. */
  show(accountId: string, entity: E): Promise<Record<string, unknown>>;
  write(
    accountId: string,
    stored: Versioned<E>,
    facts: TrashFacts,
    options: DeleteOptions & { deals: ContactDeals },
  ): Promise<void>;
}

export const contactOf = async (accountId: string, deal: Deal): Promise<Contact | undefined> =>
  (await getStoredContacts(accountId, [deal.contact.id]))[0]?.entity;

export const deletable: { [T in TrashType]: Deletable<never> } = {
  ticket: {
    find: findTicket,
    uuidOf: (t: Ticket) => t.uuid,
    title: (t: Ticket) => t.subject,
    show: async (_accountId: string, t: Ticket) => presentCreatedTicket(t),
    // A deleted ticket leaves its agent's open work: their freed entry in the deletion's commit (the queue).
    write: (accountId, stored, facts, options) =>
      deleteTicket(accountId, stored, facts, {
        ...options,
        attach: [
          ...(options.attach ?? []),
          ...freedItems(accountId, freedByTicketChange(stored.entity, undefined)),
        ],
      }),
  } satisfies Deletable<Ticket>,
  deal: {
    find: findDeal,
    uuidOf: (d: Deal) => d.uuid,
    title: (d: Deal) => d.name,
    show: async (accountId: string, d: Deal) => presentDealDetail(d, await contactOf(accountId, d)),
    write: deleteDeal,
  } satisfies Deletable<Deal>,
  contact: {
    find: findContact,
    uuidOf: (c: Contact) => c.uuid,
    title: (c: Contact) => fullName(c.firstName, c.lastName),
    // A contact is deleted only when it has no deals: none are open.
    show: async (_accountId: string, c: Contact) => presentContact(c, 0),
    write: deleteContact,
  } satisfies Deletable<Contact>,
} as never;
