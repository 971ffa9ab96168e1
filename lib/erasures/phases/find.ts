import type { Contact } from '#lib/accounts/types.ts';
import { findContactByEmail } from '#lib/data/contacts/contacts.ts';
import { type Move, next } from '../move.ts';
import { withIdentity } from '../redact.ts';

/** Phase `find`: the person's contact, by their address (its name and phone are the person's too). */
export async function find({ accountId, p }: Move): Promise<undefined> {
  const contact = await findContactByEmail(accountId, p.person.email);
  if (contact) {
    p.contact = { id: contact.id, uuid: contact.uuid };
    p.person = withIdentity(p.person, fullNameOf(contact), contact.phone);
  }
  next(p, 'identity');
}

const fullNameOf = (c: Contact) => [c.firstName, c.lastName].filter(Boolean).join(' ');
