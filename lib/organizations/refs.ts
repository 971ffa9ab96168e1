import {
  getOrganization,
  getOrganizations,
  organizationByDomain,
} from '#lib/data/organizations/organizations.ts';
import { domainName } from '#lib/email/addresses.ts';
import { ValidationFailed } from '#lib/errors.ts';
import type { Organization, OrganizationRef } from './types.ts';

/**
 * The organization a ticket or contact names (decisions.md, "People: agents, teams and organizations"): set when
 * it is made (from its contact, else from its address's domain), kept when the organization's domains change,
 * changed by a PATCH of `organization_id`, and shown under the organization's name as it is now (docs/decisions.md,
 * "Organization on tickets and contacts").
 */

export const refOf = (org: Organization): OrganizationRef => ({ id: org.id, name: org.name });

/** The organization owning an address's domain (one GetItem of the domain's claim), or null. */
export async function organizationOfAddress(
  accountId: string,
  email: string,
): Promise<OrganizationRef | null> {
  const domain = domainName(email.slice(email.lastIndexOf('@') + 1));
  if (domain === undefined) return null;
  const org = await organizationByDomain(accountId, domain);
  return org ? refOf(org) : null;
}

/**
 * A new ticket's organization: its requester's contact's, as it is now (one GetItem, only when the contact names
 * one), else the one owning the address's domain (`byDomain`, read beside the contact).
 */
export async function organizationOfRequester(
  accountId: string,
  contact: { organization?: OrganizationRef | null } | undefined,
  byDomain: Promise<OrganizationRef | null>,
): Promise<OrganizationRef | null> {
  if (contact?.organization) {
    const current = await getOrganization(accountId, contact.organization.id);
    if (current) return refOf(current.entity);
  }
  return byDomain;
}

/** What a PATCH's `organization_id` names: null clears; an id not of the account's organizations is a 422. */
export async function organizationOfId(
  accountId: string,
  id: number | null,
): Promise<OrganizationRef | null> {
  if (id === null) return null;
  const org = await getOrganization(accountId, id);
  if (!org) throw ValidationFailed.field('organization_id', 'The selected organization id is invalid.');
  return refOf(org.entity);
}

/** Organizations as they are now, by id (one BatchGet); a deleted one is null. */
export async function organizationsNow(
  accountId: string,
  ids: number[],
): Promise<Map<number, OrganizationRef | null>> {
  const found = new Map((await getOrganizations(accountId, ids)).map((o) => [o.id, refOf(o)]));
  return new Map(ids.map((id) => [id, found.get(id) ?? null]));
}

/**
 * Entities with their organization as it is now: one BatchGet of the distinct ids not `known` already (a list
 * filtered by one organization reads it beside its page), none when no entity names one. The name a ticket or
 * contact keeps is the one it had when last written; a deleted organization reads as null (the clearing runner
 * then writes that: lib/organizations/clearing.ts).
 */
export async function withCurrentOrganizations<E extends { organization?: OrganizationRef | null }>(
  accountId: string,
  entities: E[],
  known: Map<number, OrganizationRef | null> = new Map(),
): Promise<E[]> {
  const ids = entities.flatMap((e) =>
    e.organization && !known.has(e.organization.id) ? [e.organization.id] : [],
  );
  const current = ids.length === 0 ? known : new Map([...known, ...(await organizationsNow(accountId, ids))]);
  return entities.map((e) =>
    e.organization ? { ...e, organization: current.get(e.organization.id) ?? null } : e,
  );
}

/** One entity with its organization as it is now (withCurrentOrganizations). */
export async function withCurrentOrganization<E extends { organization?: OrganizationRef | null }>(
  accountId: string,
  entity: E,
): Promise<E> {
  if (!entity.organization) return entity;
  const current = await getOrganization(accountId, entity.organization.id);
  return { ...entity, organization: current ? refOf(current.entity) : null };
}

/**
 * An entity as a change reads it (with its version), its organization's name as it is now (one read, only when it
 * has one). A deleted organization is kept as stored, since the index moves from what is stored: the clearing
 * runner takes it off with its own event.
 */
export async function withCurrentName<
  E extends { organization?: OrganizationRef | null },
  S extends { entity: E },
>(accountId: string, stored: S): Promise<S> {
  if (!stored.entity.organization) return stored;
  const entity = await withCurrentOrganization(accountId, stored.entity);
  return entity.organization ? { ...stored, entity } : stored;
}
