import { isDeepStrictEqual } from 'node:util';
import type { Contact } from '#lib/accounts/types.ts';
import { contacts as contactIndex } from '#lib/data/contacts/contact-index.ts';
import {
  ContactTaken,
  getContactByUuid,
  updateContact as writeContact,
} from '#lib/data/contacts/contacts.ts';
import { openDealCounts } from '#lib/data/deals/deals.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/requests/idempotency.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { updatedEvent } from '#lib/events/drafts.ts';
import {
  organizationOfId,
  withCurrentName,
  withCurrentOrganization,
  withCurrentOrganizations,
} from '#lib/organizations/refs.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import { type ListUrl, paginate, withinReadBudget } from '#lib/pagination.ts';
import { searchWords } from '#lib/search.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { updateVersioned, type Versioned } from '#lib/versioned-update.ts';
import { presentContact } from './present.ts';
import { type ContactListQuery, type UpdateContactInput, UpdateContactSchema } from './schemas.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A contact as read, with its version and its open deals. */
export interface ContactView extends Versioned<Contact> {
  openDeals: number;
}

export async function findContact(accountId: string, ref: string): Promise<Versioned<Contact> | undefined> {
  const uuid = ref.trim().toLowerCase();
  return UUID.test(uuid) ? getContactByUuid(accountId, uuid) : undefined;
}

/** A contact with its open deals, and its organization under its name as it is now (both read at once). */
async function withOpenDeals(accountId: string, stored: Versioned<Contact>): Promise<ContactView> {
  const [counts, entity] = await Promise.all([
    openDealCounts(accountId, [stored.entity.id]),
    withCurrentOrganization(accountId, stored.entity),
  ]);
  return { ...stored, entity, openDeals: counts.get(stored.entity.id) ?? 0 };
}

/** The `getContact` route: by uuid; unknown, malformed and other accounts' contacts are 404. */
export async function getContact(accountId: string, ref: string): Promise<ContactView> {
  const stored = await findContact(accountId, ref);
  if (!stored) throw new NotFound();
  return withOpenDeals(accountId, stored);
}

/**
 * The `updateContact` route: first_name, last_name, phone, email. A changed e-mail must be free in the
 * account (422 on `email`), also when requests race for it: the e-mail item is the constraint. Deals show the
 * contact as it is now, so no deal is rewritten.
 */
export async function updateContact(
  accountId: string,
  ref: string,
  body: unknown,
  options: {
    ifMatch?: string | undefined;
    attach?: ((view: ContactView) => CommitAttachment) | undefined;
  } = {},
): Promise<ContactView> {
  const input = parseInput(UpdateContactSchema, body);
  // The organization named (a 422 when it is not the account's), read beside the contact's first read.
  const organization =
    input.organization_id !== undefined ? organizationOfId(accountId, input.organization_id) : undefined;
  organization?.catch(() => undefined);
  let named: OrganizationRef | null | undefined;
  let openDeals: Promise<Map<number, number>> | undefined;
  const updated = await updateVersioned<Contact>({
    read: async () => {
      const [found, target] = await Promise.all([findContact(accountId, ref), organization]);
      named = target;
      if (found) openDeals ??= openDealCounts(accountId, [found.entity.id]);
      return found && target === undefined ? withCurrentName(accountId, found) : found;
    },
    apply: (before) => applyContactChange(before, input, nowMicros(), named),
    write: async (before, after, version) => {
      const count = (await openDeals)?.get(after.id) ?? 0;
      try {
        return await writeContact(
          accountId,
          { before, after, version },
          {
            attach: completionCommit(
              options.attach?.({ entity: after, version: version + 1, openDeals: count }),
            ),
            event: updatedEvent(
              'contact',
              presentContact(before, count),
              presentContact(after, count),
              version + 1,
            ),
          },
        );
      } catch (error) {
        if (error instanceof ContactTaken) {
          throw ValidationFailed.field('email', 'The email has already been taken.');
        }
        throw error;
      }
    },
    ifMatch: options.ifMatch,
    changedMessage: 'The contact has changed since you read it (If-Match does not match its ETag).',
  });
  const counts = await openDeals;
  return { ...updated, openDeals: counts?.get(updated.entity.id) ?? 0 };
}

export function applyContactChange(
  before: Contact,
  input: UpdateContactInput,
  nowUs: number,
  organization?: OrganizationRef | null,
): Contact {
  const after: Contact = { ...before };
  if (organization === null) delete after.organization;
  else if (organization !== undefined) after.organization = organization;
  if (input.first_name !== undefined) after.firstName = input.first_name;
  if (input.last_name !== undefined) after.lastName = input.last_name;
  if (input.phone !== undefined) after.phone = input.phone;
  if (input.email !== undefined) after.email = input.email;
  if (!isDeepStrictEqual(after, before)) after.updatedAt = formatTimestamp(nowUs);
  return after;
}

/** The `listContacts` route: filtered by e-mail, searched by words of name and e-mail, paginated, newest first. */
export async function listContacts(accountId: string, query: ContactListQuery, at: ListUrl) {
  const { total, entities } = await withinReadBudget(
    contactIndex.findPage(accountId, {
      filter: query.email !== undefined ? { email: query.email } : {},
      words: query.search ? searchWords(query.search) : [],
      offset: (query.page - 1) * query.perPage,
      limit: query.perPage,
    }),
  );
  // Open deals, and organizations under their names as they are now, read at once.
  const [counts, shown] = await Promise.all([
    openDealCounts(
      accountId,
      entities.map((c) => c.id),
    ),
    withCurrentOrganizations(accountId, entities),
  ]);
  return paginate(
    shown.map((c) => presentContact(c, counts.get(c.id) ?? 0)),
    total,
    query,
    at,
  );
}
