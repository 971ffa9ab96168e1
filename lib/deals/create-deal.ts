import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { fullName } from '#lib/accounts/contact-name.ts';
import type { Contact } from '#lib/accounts/types.ts';
import { presentContact } from '#lib/contacts/present.ts';
import { ContactTaken, findContactByEmail, newContactUuid } from '#lib/data/contacts.ts';
import { insertDeal, newDealUuid, reserveContactId, reserveDealNumber } from '#lib/data/deals.ts';
import { ConcurrentWrite, retryOnConflict } from '#lib/data/errors.ts';
import type { ReservedPlaces } from '#lib/data/events.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/idempotency.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { createdEvent } from '#lib/events/drafts.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { defaultStage, type PipelineStage, resolveStage } from './pipeline-stage.ts';
import { presentDealDetail } from './present.ts';
import { type CreateDealInput, CreateDealSchema } from './schemas.ts';
import type { Deal } from './types.ts';

/**
 * The `createDeal` route. Round trips once settings are warm: (1) the contact by e-mail, beside the deal's number;
 * then for an existing contact (2) the deal. For a new contact: (2) its integer id, (3) contact and deal in one
 * transaction whose e-mail item is the unique constraint; if a concurrent request created the contact first,
 * (4) the deal is attached to that winner. Every check that can reject the request runs before the first
 * write, but for a missing contact_first_name, which is known once the contact was looked up (the deal's number
 * it took is then lost, as a failed create's is: deal numbers are not shown). `attach` gives what to write with
 * the deal (an Idempotency-Key's kept answer), in its commit.
 */
export async function createDeal(
  accountId: string,
  body: unknown,
  attach?: (deal: Deal) => CommitAttachment,
): Promise<Deal> {
  const input = parseInput(CreateDealSchema, body);
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const { pipeline, stage } = resolveStage(config, input) ?? defaultStage(config);

  // The deal's event takes its place with the deal's number, a new contact's with the contact's id.
  const [reservation, existing] = await reserveDealNumber(accountId, () =>
    findContactByEmail(accountId, input.contact_email),
  );
  const { number, place: dealPlace } = reservation;
  const createdUs = nowMicros();
  const dealFor = (contact: Contact) =>
    composeDeal({ input, number, createdUs, place: { pipeline, stage }, contact });

  // Lost to a concurrent commit (a transaction conflict, or a reader closed the event's place): nothing was
  // written, write again (new places are taken for the events). A ConcurrentWrite let through was a 500.
  const write = (deal: Deal, contact: Contact, newContact?: { contact: Contact; place: ReservedPlaces }) =>
    retryOnConflict(
      () =>
        insertDeal(accountId, deal, {
          attach: completionCommit(attach?.(deal)),
          event: createdEvent('deal', presentDealDetail(deal, contact)),
          place: dealPlace,
          newContact: newContact && {
            ...newContact,
            event: createdEvent(
              'contact',
              presentContact(newContact.contact, deal.status === 'open' ? 1 : 0),
            ),
          },
        }),
      { retryable: (error) => error instanceof ConcurrentWrite },
    );

  if (existing) {
    const deal = dealFor(existing);
    await write(deal, existing);
    return deal;
  }
  if (input.contact_first_name === undefined) {
    // The deal's place in the feed is given up, so that no event waits behind it.
    await reservation.release();
    throw ValidationFailed.field(
      'contact_first_name',
      'The contact first name field is required when the contact does not exist.',
    );
  }
  // No contact id (or its answer lost): the reservation gives the deal's place up too.
  const { id, place: contactPlace } = await reserveContactId(accountId, reservation);
  const contact: Contact = {
    id,
    uuid: newContactUuid(id),
    email: input.contact_email,
    firstName: input.contact_first_name,
    lastName: input.contact_last_name ?? null,
    phone: input.contact_phone ?? null,
    createdAt: formatTimestamp(createdUs),
    updatedAt: formatTimestamp(createdUs),
  };
  const deal = dealFor(contact);
  try {
    await write(deal, contact, { contact, place: contactPlace });
    return deal;
  } catch (error) {
    if (!(error instanceof ContactTaken)) throw error;
    // A concurrent request created the contact first: the deal is that contact's.
    const attached = dealFor(error.existing);
    await write(attached, error.existing);
    return attached;
  }
}

export interface DealParts {
  input: Pick<CreateDealInput, 'name' | 'amount' | 'currency' | 'expected_close_date' | 'contact_phone'>;
  number: number;
  createdUs: number;
  place: PipelineStage;
  contact: Contact;
}

/** The deal that a create with these decisions stores (pure: also used by the benchmark's bulk loader). */
export function composeDeal({ input, number, createdUs, place, contact }: DealParts): Deal {
  const created = formatTimestamp(createdUs);
  return {
    // The uuid carries the contact's id: a deal is read with its contact in one round trip.
    uuid: newDealUuid(createdUs, number, contact.id),
    number,
    name: input.name,
    amount: input.amount ?? 0,
    currency: input.currency ?? 'EUR',
    status: 'open',
    probability: place.stage.probability,
    pipeline: { id: place.pipeline.id, name: place.pipeline.name },
    stage: { id: place.stage.id, name: place.stage.name, color: place.stage.color },
    contact: {
      id: contact.id,
      uuid: contact.uuid,
      fullName: fullName(contact.firstName, contact.lastName),
      email: contact.email,
    },
    expectedCloseDate: input.expected_close_date ?? null,
    contactPhone: input.contact_phone ?? null,
    lostReason: null,
    wonAt: null,
    lostAt: null,
    createdAt: created,
    updatedAt: created,
  };
}
