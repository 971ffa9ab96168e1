import { isDeepStrictEqual } from 'node:util';
import * as v from 'valibot';
import type { Contact } from '#lib/accounts/types.ts';
import { presentContact } from '#lib/contacts/present.ts';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import {
  ContactTaken,
  getContactById,
  getContactByUuid,
  newContactUuid,
  planNewContact,
  updateContact as writeContact,
} from '#lib/data/contacts/contacts.ts';
import { openDealCounts } from '#lib/data/deals/deals.ts';
import { claimSourceKey, findSourceKeys, touchSourceKey } from '#lib/data/imports/source-keys.ts';
import { findWouldCreate } from '#lib/data/imports/would-create.ts';
import { writePlan } from '#lib/data/index/write-plan.ts';
import { getOrganizations } from '#lib/data/organizations/organizations.ts';
import { type CommitAction, commit } from '#lib/data/store/transact.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { organizationOfAddress, refOf } from '#lib/organizations/refs.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { optionalText, parseInput, requiredEmail, requiredText } from '#lib/validation.ts';
import { importEvent } from './imported-from.ts';
import { type Keyed, RecordRefused, writeEach } from './people-common.ts';
import type { ImportedContact } from './records.ts';
import type { ImportContext, PageWritten } from './writing.ts';

/**
 * Imported contacts (issue 42): found by their source key, else the account's contact of the same e-mail (one per
 * account: it takes the source's name and phone, `imported_from` stays null, undo leaves it), else created. Its
 * organization: the source's (an organization imported before it), else the one owning its address's domain.
 */
const ContactFields = v.object({
  email: requiredEmail('email'),
  first_name: requiredText('first_name', 255),
  last_name: optionalText('last_name', 255),
  phone: optionalText('phone', 64),
});

interface Checked extends ImportedContact {
  firstName: string;
  lastName: string | null;
}

export async function writeContacts(
  ctx: ImportContext,
  contacts: readonly ImportedContact[],
  written: PageWritten,
): Promise<void> {
  if (contacts.length === 0) return;
  const organizationOf = await organizationsOf(ctx, contacts, written);
  const write = async ({ record, ref, digest, found }: Keyed<Checked>) => {
    const stored = found ? await getContactByUuid(ctx.accountId, String(found.objectId)) : undefined;
    if (found && !stored) throw new RecordRefused('The contact it was imported as was deleted here.');
    const organization = await organizationOf(record);
    if (ctx.validate) {
      return !stored ? 'created' : changed(stored.entity, record, organization) ? 'updated' : 'unchanged';
    }
    if (stored && found) {
      const key = touchSourceKey(ctx.accountId, ref, found.digest, digest, ctx.mark);
      return update(ctx, stored, record, key, organization);
    }
    const id = (await reserveIds(ctx.accountId, { contact: 1 })).contact as number;
    const createdUs = nowMicros();
    const contact: Contact = {
      id,
      uuid: newContactUuid(id, createdUs),
      email: record.email,
      firstName: record.firstName,
      lastName: record.lastName,
      phone: record.phone,
      createdAt: formatTimestamp(createdUs),
      updatedAt: formatTimestamp(createdUs),
      ...(organization ? { organization } : {}),
      importedFrom: { source: ctx.source, id: record.sourceId, importId: ctx.importId },
    };
    const claim = (objectId: string, matched: boolean) =>
      claimSourceKey(
        ctx.accountId,
        ref,
        { objectId, importId: ctx.importId, digest, matched },
        matched ? undefined : ctx.mark,
      );
    const event = importEvent(createdEvent('contact', presentContact(contact, 0)), ctx.importId);
    try {
      await writePlan(planNewContact(ctx.accountId, contact, [claim(contact.uuid, false)], [event]));
      return 'created';
    } catch (error) {
      if (!(error instanceof ContactTaken)) throw error;
      // The account's contact of this e-mail: matched, and given the source's name, phone and organization.
      const existing = await getContactById(ctx.accountId, error.existing.id);
      if (!existing) throw error;
      return update(ctx, existing, record, claim(existing.entity.uuid, true), organization);
    }
  };
  await writeEach<Checked>(ctx, contacts.map(unchecked), written, {
    type: 'contacts',
    sourceIdOf: (c) => c.sourceId,
    check,
    write,
  });
}

/** A record before its check: its name not split yet (check gives the checked one; its digest is the record's). */
const unchecked = (c: ImportedContact): Checked => ({ ...c, firstName: '', lastName: null });

/** The source's e-mail, name (split at its first space; none: the address's local part) and phone, as the API checks them. */
function check(c: Checked): Checked {
  const name = (c.name ?? '').trim();
  const split = name.indexOf(' ');
  const first = name === '' ? c.email.slice(0, Math.max(0, c.email.lastIndexOf('@'))) : name;
  const input = parseInput(ContactFields, {
    email: c.email,
    first_name: split > 0 ? name.slice(0, split) : first,
    last_name: split > 0 ? name.slice(split + 1) : null,
    phone: c.phone,
  });
  return {
    ...c,
    email: input.email,
    firstName: input.first_name,
    lastName: input.last_name ?? null,
    phone: input.phone ?? null,
  };
}

/**
 * How a page's contacts find their organization: the source's, by its source key (one BatchGet of the keys, one of
 * the organizations); one not imported is an error row and the contact kept without it. None named: the domain's.
 */
async function organizationsOf(
  ctx: ImportContext,
  contacts: readonly ImportedContact[],
  written: PageWritten,
) {
  const named = contacts.flatMap((c) => (c.organizationSourceId ? [c.organizationSourceId] : []));
  const keys = await findSourceKeys(ctx.accountId, ctx.source, 'organizations', named);
  const unkeyed = named.filter((sourceId) => !keys.has(sourceId));
  const would = ctx.validate
    ? await findWouldCreate(ctx.accountId, ctx.importId, ctx.source, 'organizations', unkeyed)
    : new Set<string>();
  const ids = [...keys.values()].map((k) => Number(k.objectId));
  const orgs = new Map((await getOrganizations(ctx.accountId, ids)).map((o) => [o.id, refOf(o)]));
  return async (c: Checked): Promise<OrganizationRef | null> => {
    if (!c.organizationSourceId) return organizationOfAddress(ctx.accountId, c.email);
    const key = keys.get(c.organizationSourceId);
    const org = key ? orgs.get(Number(key.objectId)) : undefined;
    // Validating, an organization this run would have created is not written: no row for it.
    if (!org && !would.has(c.organizationSourceId)) {
      written.errors.push({
        type: 'contacts',
        sourceId: c.sourceId,
        reason: `The organization ${c.organizationSourceId} is not imported: the contact is kept without it.`,
      });
    }
    return org ?? null;
  };
}

/** The contact with the record's fields and organization; undefined when that changes nothing. */
function changed(before: Contact, c: Checked, organization: OrganizationRef | null): Contact | undefined {
  const next: Contact = { ...before, firstName: c.firstName, lastName: c.lastName, phone: c.phone };
  if (organization) next.organization = organization;
  else delete next.organization;
  return isDeepStrictEqual(next, before) ? undefined : next;
}

/**
 * Writes a contact's change to the record's fields and organization, with `key` in its commit; a record that changes
 * nothing here (a field not imported changed at the source) moves the key alone, and is `unchanged`.
 */
async function update(
  ctx: ImportContext,
  stored: { entity: Contact; version: number },
  c: Checked,
  key: CommitAction,
  organization: OrganizationRef | null,
): Promise<'updated' | 'unchanged'> {
  const before = stored.entity;
  const next = changed(before, c, organization);
  if (!next) {
    await commit([key]);
    return 'unchanged';
  }
  const after = { ...next, updatedAt: formatTimestamp(nowMicros()) };
  const deals = (await openDealCounts(ctx.accountId, [before.id])).get(before.id) ?? 0;
  const shown = (x: Contact) => presentContact(x, deals);
  const event = updatedEvent('contact', shown(before), shown(after), stored.version + 1);
  await writeContact(
    ctx.accountId,
    { before, after, version: stored.version },
    { attach: [key], event: importEvent(event, ctx.importId) },
  );
  return 'updated';
}
