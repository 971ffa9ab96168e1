import { isDeepStrictEqual } from 'node:util';
import type { ConfigEntity } from '#lib/data/accounts/accounts.ts';
import type { Timestamp } from '#lib/time.ts';
import type { AccountFile } from './account-file.ts';
import { DEFAULT_CATEGORIES, DEFAULT_TICKET_PREFIX } from './defaults.ts';
import { countNewStages, mergePipelines, pipelineInputs } from './merge-pipelines.ts';
import { countNew, emailKey, idsNamed, mergeBy, nameKey, slugKey } from './natural-keys.ts';
import type { Account, AccountConfig, BusinessHours, Contact, Sequence, SlaPolicy } from './types.ts';

/**
 * The account a file describes, merged into what the account already has: no I/O, so the rules of `apply`
 * (operations.md) are tested without DynamoDB. What the file omits is left as it is (an agent's `active` and
 * teams too, and what only the API sets); matched entities keep their ids (natural-keys.ts), new ones take theirs.
 */
export type IdCounts = Partial<Record<Sequence, number>>;

/** What the merge cannot decide itself: ids, the time, and uuids of new contacts. */
export interface Allocation {
  accountId: string;
  /** First reserved id of each sequence; the merge uses exactly `newIdCounts` of them. */
  firstIds: IdCounts;
  timestamp: Timestamp;
  /** A new contact's uuid, given its id (lib/data: its uuid names where it is stored). */
  newUuid: (id: number) => string;
}

export interface MergedAccount {
  config: AccountConfig;
  /** The file's contacts as they are once it is applied. */
  contacts: Contact[];
  /** Only what differs from the existing state is written. */
  accountChanged: boolean;
  changed: ConfigEntity[];
  newContacts: Contact[];
  changedContacts: Contact[];
}

/** How many ids of each sequence the merge needs: one per entity that matches no existing one. */
export function newIdCounts(
  file: AccountFile,
  existing: AccountConfig | undefined,
  existingContacts: Contact[],
): IdCounts {
  const pipelines = pipelineInputs(file, existing);
  return {
    team: countNew(existing?.teams ?? [], file.teams ?? [], nameKey),
    agent: countNew(existing?.agents ?? [], file.agents ?? [], emailKey),
    category: countNew(existing?.categories ?? [], categoryInputs(file), slugKey),
    pipeline: countNew(existing?.pipelines ?? [], pipelines, nameKey),
    stage: countNewStages(existing?.pipelines ?? [], pipelines),
    contact: countNew(existingContacts, file.contacts ?? [], emailKey),
  };
}

export function mergeAccount(
  file: AccountFile,
  existing: AccountConfig | undefined,
  existingContacts: Contact[],
  allocation: Allocation,
): MergedAccount {
  const next = sequenceCursor(allocation.firstIds);

  const teams = mergeBy(existing?.teams ?? [], file.teams ?? [], nameKey, (t, old) => ({
    ...old,
    id: old?.id ?? next('team'),
    name: t.name,
  }));
  const teamId = (name: string) => teams.find((t) => nameKey(t) === name.toLowerCase())?.id ?? null;

  const agents = mergeBy(existing?.agents ?? [], file.agents ?? [], emailKey, (a, old) => ({
    ...old,
    id: old?.id ?? next('agent'),
    email: a.email,
    name: a.name,
    active: a.active ?? old?.active ?? true,
    teamIds: a.teams ? idsNamed(teams, a.teams) : (old?.teamIds ?? []),
  }));

  const categories = mergeBy(existing?.categories ?? [], categoryInputs(file), slugKey, (c, old) => ({
    id: old?.id ?? next('category'),
    slug: c.slug,
    name: c.name ?? old?.name ?? c.fallbackName,
    defaultTeamId:
      c.defaultTeam === undefined
        ? (old?.defaultTeamId ?? null)
        : c.defaultTeam === null
          ? null
          : teamId(c.defaultTeam),
  }));

  const pipelines = mergePipelines(existing?.pipelines ?? [], pipelineInputs(file, existing), next);

  const account = accountSettings(file, existing, allocation);
  const accountChanged = !existing || !sameAccount(existing.account, account);
  if (existing && !accountChanged) account.updatedAt = existing.account.updatedAt;

  const { contacts, newContacts, changedContacts } = mergeContacts(file, existingContacts, allocation, next);

  return {
    config: { account, teams, agents, categories, pipelines },
    contacts,
    accountChanged,
    changed: [
      ...changedOf('team', existing?.teams ?? [], teams),
      ...changedOf('agent', existing?.agents ?? [], agents),
      ...changedOf('category', existing?.categories ?? [], categories),
      ...changedOf('pipeline', existing?.pipelines ?? [], pipelines),
    ],
    newContacts,
    changedContacts,
  };
}

/** The account's own settings after the file: what it omits stays as it was; `updatedAt` is the allocation's time. */
function accountSettings(
  file: AccountFile,
  existing: AccountConfig | undefined,
  allocation: Allocation,
): Account {
  const { timestamp } = allocation;
  return {
    id: allocation.accountId,
    slug: file.slug,
    name: file.name,
    plan: file.plan,
    suspended: file.suspended ?? existing?.account.suspended ?? false,
    rateLimitPerMinute:
      file.rate_limit_per_minute === undefined
        ? (existing?.account.rateLimitPerMinute ?? null)
        : file.rate_limit_per_minute,
    ticketPrefix: file.ticket_prefix ?? existing?.account.ticketPrefix ?? DEFAULT_TICKET_PREFIX,
    defaultPriority: file.default_priority ?? existing?.account.defaultPriority ?? 'medium',
    autoAssignment: {
      enabled: file.auto_assignment?.enabled ?? existing?.account.autoAssignment.enabled ?? false,
      method: file.auto_assignment?.method ?? existing?.account.autoAssignment.method ?? 'round_robin',
    },
    businessHours:
      file.business_hours === undefined
        ? (existing?.account.businessHours ?? null)
        : file.business_hours === null
          ? null
          : toBusinessHours(file.business_hours),
    slaPolicies: file.sla_policies
      ? file.sla_policies.map(toSlaPolicy)
      : (existing?.account.slaPolicies ?? []),
    ...(file.email
      ? { email: { addresses: file.email.addresses, acknowledge: file.email.acknowledge ?? false } }
      : existing?.account.email
        ? { email: existing.account.email }
        : {}),
    createdAt: existing?.account.createdAt ?? timestamp,
    updatedAt: timestamp,
  };
}

/**
 * The file's contacts, matched to the existing ones by e-mail: a match keeps its id, uuid and e-mail (as first
 * written) and is changed only when it differs; a new one takes the next contact id.
 */
function mergeContacts(
  file: AccountFile,
  existingContacts: Contact[],
  allocation: Allocation,
  next: (sequence: Sequence) => number,
): { contacts: Contact[]; newContacts: Contact[]; changedContacts: Contact[] } {
  const { timestamp } = allocation;
  const oldContacts = new Map(existingContacts.map((c) => [emailKey(c), c]));
  const newContacts: Contact[] = [];
  const changedContacts: Contact[] = [];
  const contacts = (file.contacts ?? []).map((c) => {
    const old = oldContacts.get(emailKey(c));
    const id = old?.id ?? next('contact');
    const contact: Contact = {
      id,
      uuid: old?.uuid ?? allocation.newUuid(id),
      email: old?.email ?? c.email,
      firstName: c.first_name,
      lastName: c.last_name ?? null,
      phone: c.phone ?? null,
      createdAt: old?.createdAt ?? timestamp,
      updatedAt: old?.updatedAt ?? old?.createdAt ?? timestamp,
      ...(old?.organization ? { organization: old.organization } : {}), // the file names none: kept
    };
    if (!old) {
      newContacts.push(contact);
    } else if (!isDeepStrictEqual(old, contact)) {
      contact.updatedAt = timestamp;
      changedContacts.push(contact);
    }
    return contact;
  });
  return { contacts, newContacts, changedContacts };
}

/** Every category the account has after the file: the spec's defaults and the file's, by slug. */
function categoryInputs(file: AccountFile) {
  const fromFile = new Map((file.categories ?? []).map((c) => [c.slug, c]));
  const slugs = new Set([...DEFAULT_CATEGORIES, ...(file.categories ?? [])].map(slugKey));
  return [...slugs].map((slug) => ({
    slug,
    name: fromFile.get(slug)?.name,
    defaultTeam: fromFile.get(slug)?.default_team,
    fallbackName: DEFAULT_CATEGORIES.find((c) => c.slug === slug)?.name ?? slug,
  }));
}

function sameAccount(a: Account, b: Account): boolean {
  return isDeepStrictEqual({ ...a, updatedAt: '' }, { ...b, updatedAt: '' });
}

function changedOf(
  type: ConfigEntity['type'],
  old: { id: number }[],
  current: { id: number }[],
): ConfigEntity[] {
  const byId = new Map(old.map((o) => [o.id, o]));
  return current
    .filter((entity) => !isDeepStrictEqual(byId.get(entity.id), entity))
    .map((value) => ({ type, value }) as ConfigEntity);
}

function sequenceCursor(first: IdCounts) {
  const cursor = { ...first };
  return (sequence: Sequence): number => {
    const id = cursor[sequence];
    if (id === undefined) throw new Error(`No id reserved for a new ${sequence}`);
    cursor[sequence] = id + 1;
    return id;
  };
}

function toBusinessHours(input: NonNullable<AccountFile['business_hours']>): BusinessHours {
  return {
    timeZone: input.time_zone,
    weekly: input.weekly as BusinessHours['weekly'],
    holidays: [...(input.holidays ?? [])].sort(),
  };
}

function toSlaPolicy(input: NonNullable<AccountFile['sla_policies']>[number]): SlaPolicy {
  return {
    name: input.name,
    priority: input.priority ?? null,
    category: input.category ?? null,
    firstReplyMinutes: input.first_reply_minutes ?? null,
    nextReplyMinutes: input.next_reply_minutes ?? null,
    resolutionMinutes: input.resolution_minutes ?? null,
    businessHours: input.business_hours ?? false,
  };
}
