import { findContactByEmail } from '#lib/data/contacts/contacts.ts';
import { deleteAddressDimensions } from '#lib/data/erasures.ts';
import { eraseAddressOutbox } from '#lib/data/outbox.ts';
import { dimension, tickets } from '#lib/data/tickets/ticket-index.ts';
import { splitAddress } from '#lib/email/addresses.ts';
import { parseTimestamp } from '#lib/time.ts';
import { type Move, next } from '../move.ts';

/**
 * Phase `leftovers`: what the address itself leaves, which no longer counts anything: its suppression and
 * acknowledgement counters, its dimensions' empty counters, blocks and directory entries.
 */
export async function leftovers({ accountId, record, p, count }: Move): Promise<undefined> {
  const email = p.person.email;
  // Something of the person's from before the start is live again (a ticket or contact restored from the
  // trash before the trash phase reached it, or after the contact phase): the job goes back to its start
  // rather than complete with it. Bounded: a go-back erases every such object (out of the address's
  // postings for good), and one can come back only from the trash, where it was before the start: each
  // object of the person's trash brings the job back at most once. A ticket or contact created after the
  // start stays as written (decisions.md, "Writes after the erasure starts").
  if (await liveSinceBefore(accountId, email, parseTimestamp(record.requestedAt))) {
    next(p, 'find');
    return;
  }
  // What the outbox keeps of the address itself: its suppression and its acknowledgement counters.
  count('email_outbound', await eraseAddressOutbox(accountId, email, splitAddress(email).base));
  count('index', await deleteAddressDimensions(accountId, email));
  next(p, 'complete');
}

/**
 * Whether the address has a ticket or a contact created before `startMicros` (the erasure's start) live now:
 * its oldest ticket posting (keys only: its creation time), and its contact.
 */
async function liveSinceBefore(accountId: string, email: string, startMicros: number): Promise<boolean> {
  const [oldest] = await tickets.oldestListed(accountId, dimension.email(accountId, email), {
    after: null,
    limit: 1,
    read: false,
  });
  if (oldest && oldest.createdMicros < startMicros) return true;
  const contact = await findContactByEmail(accountId, email);
  return contact !== undefined && parseTimestamp(contact.createdAt) < startMicros;
}
