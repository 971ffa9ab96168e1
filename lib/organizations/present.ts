import { presentImportedFrom } from '#lib/imports/imported-from.ts';
import type { Organization } from './types.ts';

/** An organization as the API shows it (decisions.md, "People: agents, teams and organizations"). */
export function presentOrganization(o: Organization) {
  return {
    id: o.id,
    name: o.name,
    domains: o.domains,
    external_id: o.externalId,
    created_at: o.createdAt,
    updated_at: o.updatedAt,
    imported_from: presentImportedFrom(o.importedFrom),
  };
}
