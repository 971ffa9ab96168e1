import { getCachedAccountConfig } from '#lib/accounts/config-cache.ts';
import { fullName } from '#lib/accounts/contact-name.ts';
import type { Contact } from '#lib/accounts/types.ts';
import { presentContact } from '#lib/contacts/present.ts';
import { ContactTaken, findContactByEmail, newContactUuid } from '#lib/data/contacts/contacts.ts';
import { ContactGone, insertDeal, newDealUuid, reserveDealIds } from '#lib/data/deals/deals.ts';
import type { ReservedPlaces } from '#lib/data/events.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/requests/idempotency.ts';
import { ConcurrentWrite, retryOnConflict } from '#lib/data/store/errors.ts';
import { Conflict, NotFound, ValidationFailed } from '#lib/errors.ts';
import { createdEvent } from '#lib/events/drafts.ts';
import { organizationOfAddress } from '#lib/organizations/refs.ts';
import { formatTimestamp } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { defaultStage, type PipelineStage, resolveStage } from './pipeline-stage.ts';
import { presentDealDetail } from './present.ts';
import { type CreateDealInput, CreateDealSchema } from './schemas.ts';
import type { Deal } from './types.ts';

/**
 * The `createDeal` route. Round trips once settings are warm: (1) the contact by e-mail, beside the request's rate
 * count; (2) the deal's number and, for a new contact, the contact's id, in one update (it waits for the count, so
 * a refused request takes none); (3) one transaction writing the deal (and the new contact, whose e-mail item is
 * the unique constraint); if a concurrent request created the contact first, (4) the deal is attached to that
 * winner. Every check that can reject the request runs before the first write. `attach` gives what to write with
 * the deal (an Idempotency-Key's kept answer), in its commit.
 */
export async function createDeal(
  accountId: string,
  body: unknown,
  attach?: (deal: Deal) => CommitAttachment,
): Promise<Deal> {
  const input = parseInput(CreateDealSchema, body);
  const config = await getCachedAccountConfig(accountId);
  if (!config) throw new NotFound();
  const { pipeline, stage } = resolveStage(config, input) ?? defaultStage(config);

  // The contact is looked up beside the request's rate count; then the deal's number and its event's place (and a
  // new contact's id and its event's place) are taken in one update, which had to wait for the count anyway.
  // A new contact's organization (its address's domain's) is read beside it: no round trip more.
  const [existing, organization] = await Promise.all([
    findContactByEmail(accountId, input.contact_email),
    organizationOfAddress(accountId, input.contact_email),
  ]);
  if (!existing && input.contact_first_name === undefined) {
    throw ValidationFailed.field(
      'contact_first_name',
      'The contact first name field is required when the contact does not exist.',
    );
  }
  const reservation = await reserveDealIds(accountId, !existing);
  // The deal's (and a new contact's) time is the reservation's: their uuids carry it, their events' shard follows.
  const { number, place: dealPlace, createdUs } = reservation;
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
    ).catch((error: unknown) => {
      // The contact was deleted after it was read (it had no deals then): the request may be sent again.
      if (error instanceof ContactGone) {
        throw new Conflict(
          'The contact was deleted while the deal was being created: send the request again.',
        );
      }
      throw error;
    });

  if (existing) {
    const deal = dealFor(existing);
    await write(deal, existing);
    return deal;
  }
  const { id, place: contactPlace } = reservation.contact as NonNullable<typeof reservation.contact>;
  const contact: Contact = {
    id,
    uuid: newContactUuid(id, createdUs),
    email: input.contact_email,
    firstName: input.contact_first_name as string,
    lastName: input.contact_last_name ?? null,
    phone: input.contact_phone ?? null,
    createdAt: formatTimestamp(createdUs),
    updatedAt: formatTimestamp(createdUs),
    ...(organization ? { organization } : {}),
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
