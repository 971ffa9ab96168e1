import { fullName } from '#lib/accounts/contact-name.ts';
import type { Contact } from '#lib/accounts/types.ts';
import { presentImportedFrom } from '#lib/imports/imported-from.ts';

/** A contact as the API shows it (decisions.md, "Deals that move"), with its open deals counted exactly. */
export function presentContact(c: Contact, openDeals: number) {
  return {
    uuid: c.uuid,
    id: c.id,
    first_name: c.firstName,
    last_name: c.lastName,
    full_name: fullName(c.firstName, c.lastName),
    email: c.email,
    phone: c.phone,
    organization: c.organization ?? null,
    created_at: c.createdAt,
    updated_at: c.updatedAt ?? c.createdAt,
    open_deals_count: openDeals,
    imported_from: presentImportedFrom(c.importedFrom),
  };
}
