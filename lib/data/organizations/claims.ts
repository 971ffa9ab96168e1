import { comparedName, type Organization } from '#lib/organizations/types.ts';
import { organizationKeys } from '../keys.ts';
import { tableName } from '../store/client.ts';
import { failedConditionsOf } from '../store/errors.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * The claims that make an organization's name and each of its domains its own in the account (docs/data-model.md,
 * "Organizations"): written in the organization's own transactions, so two requests racing for a name or a domain
 * cannot both commit (the second's condition fails, or its transaction conflicts and it decides again).
 */

/** What a refused commit found held by another organization: its name, its domains. Nothing was written. */
export class OrganizationClaimsTaken extends Error {
  constructor(
    readonly nameTaken: boolean,
    readonly domains: string[],
  ) {
    super('Another organization of the account holds this name or domain');
  }
}

/** One claim found held, as a refused action names it. */
class ClaimHeld extends Error {
  constructor(readonly claim: { name: true } | { domain: string }) {
    super('Claim held');
  }
}

/**
 * Every claim a cancelled commit found held (DynamoDB reports each failed condition of a transaction), as one
 * OrganizationClaimsTaken; undefined when none was.
 */
export function claimsTakenIn(error: unknown, actions: CommitAction[]): OrganizationClaimsTaken | undefined {
  const held = failedConditionsOf(error)
    .map((i) => actions[i]?.refused?.(undefined))
    .filter((e): e is ClaimHeld => e instanceof ClaimHeld)
    .map((e) => e.claim);
  if (held.length === 0) return undefined;
  const domains = held.flatMap((c) => ('domain' in c ? [c.domain] : []));
  return new OrganizationClaimsTaken(
    held.some((c) => 'name' in c),
    domains,
  );
}

/** A domain's claim: a copy of its organization (the `domain` filter answers from it alone). */
const domainItem = (accountId: string, org: Organization, domain: string) => ({
  ...organizationKeys.domain(accountId, domain),
  type: 'organization_domain',
  ...org,
});

/** Takes a claim that must be free. */
function take(what: string, Item: Record<string, unknown>, held: ClaimHeld['claim']): CommitAction {
  return {
    what,
    action: { Put: { TableName: tableName(), Item, ConditionExpression: 'attribute_not_exists(pk)' } },
    refused: () => new ClaimHeld(held),
  };
}

/** Releases a claim this organization holds. */
function release(what: string, Key: { pk: string; sk: string }, id: number): CommitAction {
  return {
    what,
    action: {
      Delete: {
        TableName: tableName(),
        Key,
        ConditionExpression: 'id = :id',
        ExpressionAttributeValues: { ':id': id },
      },
    },
  };
}

export const takeName = (accountId: string, org: Organization) =>
  take(
    'organization_name',
    { ...organizationKeys.name(accountId, comparedName(org.name)), type: 'organization_name', id: org.id },
    { name: true },
  );

export const releaseName = (accountId: string, org: Organization) =>
  release('organization_old_name', organizationKeys.name(accountId, comparedName(org.name)), org.id);

export const takeDomain = (accountId: string, org: Organization, domain: string) =>
  take('organization_domain', domainItem(accountId, org, domain), { domain });

export const releaseDomain = (accountId: string, org: Organization, domain: string) =>
  release('organization_old_domain', organizationKeys.domain(accountId, domain), org.id);

/** Rewrites the copy in a domain's claim, which this organization still holds. */
export function refreshDomain(accountId: string, org: Organization, domain: string): CommitAction {
  return {
    what: 'organization_domain',
    action: {
      Put: {
        TableName: tableName(),
        Item: domainItem(accountId, org, domain),
        ConditionExpression: 'id = :id',
        ExpressionAttributeValues: { ':id': org.id },
      },
    },
  };
}

/** The claim actions of a change from `before` to `after` (a create: no `before`; a delete: no `after`). */
export function claimChanges(
  accountId: string,
  before: Organization | undefined,
  after: Organization | undefined,
): CommitAction[] {
  const actions: CommitAction[] = [];
  const renamed = !before || !after || comparedName(before.name) !== comparedName(after.name);
  if (before && renamed) actions.push(releaseName(accountId, before));
  if (after && renamed) actions.push(takeName(accountId, after));
  const kept = new Set(after?.domains ?? []);
  const had = new Set(before?.domains ?? []);
  for (const domain of had)
    if (!kept.has(domain) && before) actions.push(releaseDomain(accountId, before, domain));
  for (const domain of kept) {
    if (!after) continue;
    actions.push(
      had.has(domain) ? refreshDomain(accountId, after, domain) : takeDomain(accountId, after, domain),
    );
  }
  return actions;
}
