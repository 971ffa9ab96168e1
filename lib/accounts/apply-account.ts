import { randomUUID } from 'node:crypto';
import { presentContact } from '#lib/contacts/present.ts';
import {
  createAccount,
  findAccountIdBySlug,
  loadAccountConfig,
  putAccount,
  putConfigEntities,
  reserveIds,
} from '#lib/data/accounts/accounts.ts';
import { moveConfigVersion } from '#lib/data/accounts/config-version.ts';
import {
  createContact,
  findContactsByEmail,
  newContactUuid,
  saveContact,
} from '#lib/data/contacts/contacts.ts';
import { openDealCounts } from '#lib/data/deals/deals.ts';
import { claimAddresses, findAccountIdByAddress } from '#lib/data/mail/addresses.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { organizationOfAddress } from '#lib/organizations/refs.ts';
import { applyPeople } from '#lib/people/apply-people.ts';
import { now } from '#lib/time.ts';
import { AccountFileInvalid, parseAccountFile } from './account-file.ts';
import { accountState } from './account-state.ts';
import { checkAccountFile } from './check-account-file.ts';
import { forgetAccountConfig } from './config-cache.ts';
import { createKey } from './key-making.ts';
import { mergeAccount, newIdCounts } from './merge-account.ts';
import { EVERY_SCOPE } from './scopes.ts';

export interface ApplyOptions {
  newKey?: boolean;
}

/**
 * `apply FILE`: creates or updates the account a file describes (merge-account.ts). Every check runs before
 * the first write, so a bad file writes nothing; only changed items are written, so applying the same file
 * twice writes nothing.
 */
export async function applyAccountFile(raw: unknown, options: ApplyOptions = {}) {
  const file = parseAccountFile(raw);
  const accountId = await findAccountIdBySlug(file.slug);
  const existing = accountId ? await loadAccountConfig(accountId) : undefined;
  const existingContacts =
    existing && file.contacts?.length
      ? await findContactsByEmail(
          existing.account.id,
          file.contacts.map((c) => c.email),
        )
      : [];
  checkAccountFile(file, existing);
  // An address belongs to one account: one held by another is refused before anything is written.
  const addresses = file.email?.addresses ?? [];
  const holders = await Promise.all(addresses.map((a) => findAccountIdByAddress(a)));
  const taken = addresses.flatMap((_, i) =>
    holders[i] && holders[i] !== existing?.account.id
      ? [{ path: `email.addresses[${i}]`, rule: 'belongs to another account' }]
      : [],
  );
  if (taken.length > 0) throw new AccountFileInvalid(taken);

  const id = existing?.account.id ?? randomUUID();
  const firstIds = await reserveIds(id, newIdCounts(file, existing, existingContacts));
  const merged = mergeAccount(file, existing, existingContacts, {
    accountId: id,
    firstIds,
    timestamp: now(),
    newUuid: (contactId) => newContactUuid(contactId),
  });

  if (!existing) await createAccount(merged.config.account);
  else if (merged.accountChanged) await putAccount(merged.config.account);
  // Agents and teams as the API writes them (their natural keys, versions and events); then what routes to them.
  const people = await applyPeople(
    id,
    existing ?? { ...merged.config, teams: [], agents: [], versions: {} },
    merged.config,
  );
  const settings = merged.changed.filter((e) => e.type !== 'team' && e.type !== 'agent');
  await putConfigEntities(id, settings);
  await claimAddresses(id, merged.config.account.email?.addresses ?? []);
  // Each contact's change writes its event, as an API change does (its GET shows its open deals).
  for (const made of merged.newContacts) {
    // A new contact's organization: its address's domain's (decisions.md).
    const organization = await organizationOfAddress(id, made.email);
    const contact = organization ? { ...made, organization } : made;
    await createContact(id, contact, createdEvent('contact', presentContact(contact, 0)));
  }
  const openDeals = merged.changedContacts.length
    ? await openDealCounts(
        id,
        merged.changedContacts.map((c) => c.id),
      )
    : new Map<number, number>();
  for (const contact of merged.changedContacts) {
    const count = openDeals.get(contact.id) ?? 0;
    await saveContact(id, contact, (before, version) =>
      before
        ? updatedEvent('contact', presentContact(before, count), presentContact(contact, count), version)
        : createdEvent('contact', presentContact(contact, count)),
    );
  }

  // Every container's next request reads the changed configuration again (lib/accounts/config-cache.ts).
  if (merged.accountChanged || people.commits > 0 || settings.length > 0) {
    forgetAccountConfig(id);
    await moveConfigVersion(id);
  }
  const key =
    !existing || options.newKey ? await createKey(id, { name: 'apply', scopes: [EVERY_SCOPE] }) : undefined;
  return accountState(merged.config, key?.api_key, merged.contacts);
}
