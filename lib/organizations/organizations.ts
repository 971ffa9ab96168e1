import { isDeepStrictEqual } from 'node:util';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import {
  getOrganization,
  OrganizationClaimsTaken,
  OrganizationGone,
  organizationByDomain,
  organizationsAfter,
  deleteOrganization as removeOrganization,
  createOrganization as storeOrganization,
  updateOrganization as writeOrganization,
} from '#lib/data/organizations/organizations.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { formatTimestamp, nowMicros, nowMillis } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { deleteVersioned, updateVersioned, type Versioned } from '#lib/versioned-update.ts';
import { presentOrganization } from './present.ts';
import {
  CreateOrganizationSchema,
  type OrganizationListQuery,
  type UpdateOrganizationInput,
  UpdateOrganizationSchema,
} from './schemas.ts';
import type { Organization } from './types.ts';

/**
 * Organizations (decisions.md, "People: agents, teams and organizations"): create, list (by id, or by a domain),
 * read, change, delete. Found only within their account (another account's id is a 404, as an unknown one).
 */

interface WriteOptions<T> {
  ifMatch?: string | undefined;
  attach?: ((result: T) => CommitAttachment) | undefined;
  /** An import's undo (lib/imports/undo.ts): the event carries the import's id. */
  importId?: string | undefined;
}

/** What names an organization in a path: its id, digits only. */
const ID = /^[1-9]\d{0,14}$/;

export async function findOrganization(
  accountId: string,
  ref: string,
): Promise<Versioned<Organization> | undefined> {
  return ID.test(ref) ? getOrganization(accountId, Number(ref)) : undefined;
}

/** The `getOrganization` route: unknown, malformed and other accounts' ids are 404. */
export async function showOrganization(accountId: string, ref: string): Promise<Versioned<Organization>> {
  const stored = await findOrganization(accountId, ref);
  if (!stored) throw new NotFound();
  return stored;
}

/** A name or domain another organization of the account holds: the 422 naming each. */
function taken(error: OrganizationClaimsTaken): ValidationFailed {
  return new ValidationFailed({
    ...(error.nameTaken ? { name: ['The name has already been taken.'] } : {}),
    ...(error.domains.length > 0
      ? { domains: error.domains.map((d) => `The domain ${d} has already been taken.`) }
      : {}),
  });
}

/** The `createOrganization` route: a new id, the name and domains claimed with it, `organization.created`. */
export async function createOrganization(
  accountId: string,
  body: unknown,
  attach?: (org: Organization) => CommitAttachment,
): Promise<Organization> {
  const input = parseInput(CreateOrganizationSchema, body);
  const { organization: id } = await reserveIds(accountId, { organization: 1 });
  const at = formatTimestamp(nowMicros());
  const org: Organization = {
    id: id as number,
    name: input.name,
    domains: input.domains ?? [],
    externalId: input.external_id ?? null,
    createdAt: at,
    updatedAt: at,
  };
  try {
    await storeOrganization(accountId, org, {
      attach: attach?.(org),
      event: createdEvent('organization', presentOrganization(org)),
    });
  } catch (error) {
    if (error instanceof OrganizationClaimsTaken) throw taken(error);
    throw error;
  }
  return org;
}

export function applyOrganizationChange(
  before: Organization,
  input: UpdateOrganizationInput,
  nowUs: number,
): Organization {
  const after: Organization = { ...before };
  if (input.name !== undefined) after.name = input.name;
  if (input.domains !== undefined) after.domains = input.domains;
  if (input.external_id !== undefined) after.externalId = input.external_id;
  if (!isDeepStrictEqual(after, before)) after.updatedAt = formatTimestamp(nowUs);
  return after;
}

const CHANGED = 'The organization has changed since you read it (If-Match does not match its ETag).';

/** Store refusals of a versioned write, as the API answers them. */
function answerOf(error: unknown): unknown {
  if (error instanceof OrganizationClaimsTaken) return taken(error);
  if (error instanceof OrganizationGone) return new NotFound();
  return error;
}

/** The `updateOrganization` route: name, domains (the list replaced), external_id; If-Match refuses a lost update. */
export async function updateOrganization(
  accountId: string,
  ref: string,
  body: unknown,
  options: WriteOptions<Versioned<Organization>> = {},
): Promise<Versioned<Organization>> {
  const input = parseInput(UpdateOrganizationSchema, body);
  return updateVersioned<Organization>({
    read: () => findOrganization(accountId, ref),
    apply: (before) => applyOrganizationChange(before, input, nowMicros()),
    write: async (before, after, version) => {
      const event = updatedEvent(
        'organization',
        presentOrganization(before),
        presentOrganization(after),
        version + 1,
      );
      const attach = options.attach?.({ entity: after, version: version + 1 });
      return writeOrganization(accountId, { before, after, version }, { attach, event }).catch((error) => {
        throw answerOf(error);
      });
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
}

/**
 * The `deleteOrganization` route: removed for good, its name and domains free at once, `organization.deleted`;
 * answers the organization as it was. If-Match as PATCH.
 */
export async function deleteOrganization(
  accountId: string,
  ref: string,
  options: WriteOptions<Organization> = {},
): Promise<Organization> {
  const deleted = await deleteVersioned<Organization>({
    read: () => findOrganization(accountId, ref),
    remove: async (stored) => {
      const event = {
        type: 'organization.deleted',
        object: presentOrganization(stored.entity),
        version: stored.version + 1,
        ...(options.importId === undefined ? {} : { importId: options.importId }),
      };
      const attach = options.attach?.(stored.entity);
      await removeOrganization(accountId, stored, { attach, event, deletedMs: nowMillis() }).catch(
        (error) => {
          throw answerOf(error);
        },
      );
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
  return deleted.entity;
}

/**
 * The `listOrganizations` route: by id, after `after`; `next_cursor` is the last one's id when more may follow,
 * null on the last page. With `domain`, the one organization holding it (if its id is above `after`).
 */
export async function listOrganizations(
  accountId: string,
  query: OrganizationListQuery,
): Promise<{ data: ReturnType<typeof presentOrganization>[]; next_cursor: string | null }> {
  if (query.domain !== undefined) {
    const found = await organizationByDomain(accountId, query.domain);
    const shown = found && found.id > query.after ? [presentOrganization(found)] : [];
    return { data: shown, next_cursor: null };
  }
  const page = await organizationsAfter(accountId, query.after, query.limit + 1);
  const shown = page.slice(0, query.limit);
  const more = page.length > query.limit;
  return {
    data: shown.map(presentOrganization),
    next_cursor: more ? String(shown.at(-1)?.id) : null,
  };
}
