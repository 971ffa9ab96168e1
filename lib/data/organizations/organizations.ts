import type { Organization } from '#lib/organizations/types.ts';
import { commitWithEvents, type EventDraft } from '../events.ts';
import { organizationKeys } from '../keys.ts';
import { type CommitAttachment, completionCommit } from '../requests/idempotency.ts';
import { batchGetAll, getItem, queryAll, tableName } from '../store/client.ts';
import { ConcurrentWrite, retryOnConflict, StaleVersion } from '../store/errors.ts';
import { ATTR, entityOf, type Versioned } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import { claimChanges, claimsTakenIn, OrganizationClaimsTaken } from './claims.ts';
import { clearingAction } from './clearing.ts';

/**
 * Organizations in the store (docs/data-model.md, "Organizations"): an item per organization in its account's
 * partition, by id, with its version (`v`, its ETag); beside them its claims (./claims.ts). Every change writes the
 * organization, its claims, its event and the Idempotency-Key's answer in one transaction.
 */

export { OrganizationClaimsTaken } from './claims.ts';

/** The organization is not (or no longer) stored: nothing was written. */
export class OrganizationGone extends Error {
  constructor() {
    super('No such organization');
  }
}

const versionedOf = (item: Record<string, unknown>): Versioned<Organization> => ({
  entity: entityOf<Organization>(item),
  version: Number(item[ATTR.version] ?? 1),
});

export async function getOrganization(
  accountId: string,
  id: number,
): Promise<Versioned<Organization> | undefined> {
  const item = await getItem(organizationKeys.organization(accountId, id));
  return item ? versionedOf(item) : undefined;
}

/**
 * Organizations by id, as stored now (one BatchGet of the distinct ids; a deleted one is missing): what a page of
 * tickets or contacts reads to show each one's organization under its current name.
 */
export async function getOrganizations(accountId: string, ids: number[]): Promise<Organization[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const items = await batchGetAll(unique.map((id) => organizationKeys.organization(accountId, id)));
  return items.map((item) => entityOf<Organization>(item));
}

/** The organization holding a domain (lower-case ASCII): one GetItem of its claim, which holds a copy of it. */
export async function organizationByDomain(
  accountId: string,
  domain: string,
): Promise<Organization | undefined> {
  const item = await getItem(organizationKeys.domain(accountId, domain));
  return item ? entityOf<Organization>(item) : undefined;
}

/** Up to `limit` organizations with an id above `after`, by id: one Query of the account's partition. */
export async function organizationsAfter(
  accountId: string,
  after: number,
  limit: number,
): Promise<Organization[]> {
  const range = organizationKeys.idsAbove(after);
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': organizationKeys.partition(accountId),
        ':from': range.from,
        ':to': range.to,
      },
      ConsistentRead: true,
    },
    limit,
  );
  return items.map((item) => entityOf<Organization>(item));
}

/** The organization item at `version`, written on the condition that it is new (`previous` undefined) or unmoved. */
function organizationAction(
  accountId: string,
  org: Organization,
  version: number,
  previous?: number,
): CommitAction {
  const guard =
    previous === undefined
      ? { ConditionExpression: 'attribute_not_exists(pk)' }
      : {
          ConditionExpression: '#v = :v',
          ExpressionAttributeNames: { '#v': ATTR.version },
          ExpressionAttributeValues: { ':v': previous },
        };
  return {
    what: 'organization',
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...organizationKeys.organization(accountId, org.id),
          type: 'organization',
          [ATTR.version]: version,
          ...org,
        },
        ...guard,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => (held ? new StaleVersion() : new OrganizationGone()),
  };
}

/**
 * What a change's commit takes beside its own actions: a kept answer, its event, and `actions` of the caller's in
 * the same transaction (an import's source key: lib/data/imports/source-keys.ts).
 */
interface WriteOptions {
  attach?: CommitAttachment | undefined;
  event: EventDraft;
  actions?: CommitAction[] | undefined;
}

/**
 * Writes one change's commit: its actions, event and kept answer. A claim held by another organization is an
 * OrganizationClaimsTaken naming every one; a conflict is decided again here for a create (its new item cannot
 * be stale), and thrown as a ConcurrentWrite for a change of a version read (its caller reads again).
 */
async function write(
  accountId: string,
  actions: CommitAction[],
  options: WriteOptions & { retry: boolean },
): Promise<void> {
  const all = [...actions, ...(options.actions ?? []), ...completionCommit(options.attach)];
  const once = async () => {
    try {
      await commitWithEvents(accountId, all, [options.event]);
    } catch (error) {
      if (error instanceof OrganizationClaimsTaken) throw error;
      throw (error instanceof Error && claimsTakenIn(error.cause, all)) || error;
    }
  };
  await (options.retry
    ? retryOnConflict(once, { retryable: (error) => error instanceof ConcurrentWrite })
    : once());
}

/** Stores a new organization (version 1) and claims its name and domains. */
export async function createOrganization(
  accountId: string,
  org: Organization,
  options: WriteOptions,
): Promise<void> {
  const actions = [organizationAction(accountId, org, 1), ...claimChanges(accountId, undefined, org)];
  await write(accountId, actions, { ...options, retry: true });
}

/** Writes an organization's change guarded by the version read, its claims moved; answers the new version. */
export async function updateOrganization(
  accountId: string,
  change: { before: Organization; after: Organization; version: number },
  options: WriteOptions,
): Promise<number> {
  const { before, after, version } = change;
  const actions = [
    organizationAction(accountId, after, version + 1, version),
    ...claimChanges(accountId, before, after),
  ];
  await write(accountId, actions, { ...options, retry: false });
  return version + 1;
}

/**
 * Deletes an organization as read (its version unmoved), freeing its name and domains, and writes its clearing
 * (./clearing.ts), due at once: its tickets and contacts are cleared by the clearing runner.
 */
export async function deleteOrganization(
  accountId: string,
  stored: Versioned<Organization>,
  options: { attach?: CommitAttachment | undefined; event: EventDraft; deletedMs: number },
): Promise<void> {
  const { entity, version } = stored;
  const actions: CommitAction[] = [
    {
      what: 'organization',
      action: {
        Delete: {
          TableName: tableName(),
          Key: organizationKeys.organization(accountId, entity.id),
          ConditionExpression: '#v = :v',
          ExpressionAttributeNames: { '#v': ATTR.version },
          ExpressionAttributeValues: { ':v': version },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        },
      },
      refused: (held) => (held ? new StaleVersion() : new OrganizationGone()),
    },
    ...claimChanges(accountId, entity, undefined),
    clearingAction(accountId, entity.id, options.deletedMs),
  ];
  await write(accountId, actions, { ...options, retry: false });
}
