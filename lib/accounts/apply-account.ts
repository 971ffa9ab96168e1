import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import {
  type ConfigEntity,
  createAccount,
  findAccountIdBySlug,
  loadAccountConfig,
  putAccount,
  putConfigEntities,
  reserveIds,
} from '#lib/data/accounts.ts';
import { createContact, findContactsByEmail, updateContact } from '#lib/data/contacts.ts';
import { now } from '#lib/time.ts';
import { type AccountFile, AccountFileInvalid, type FileProblem, parseAccountFile } from './account-file.ts';
import { issueApiKey } from './api-keys.ts';
import { DEFAULT_CATEGORIES, DEFAULT_PIPELINE, DEFAULT_TICKET_PREFIX } from './defaults.ts';
import type {
  Account,
  AccountConfig,
  Agent,
  BusinessHours,
  Category,
  Contact,
  Pipeline,
  Sequence,
  SlaPolicy,
  Stage,
  Team,
} from './types.ts';

/**
 * `apply FILE`: creates or updates the account a file describes. Entities are matched by their natural key
 * (team and pipeline by name, agent and contact by e-mail, category by slug, stage by name in its pipeline),
 * so ids are kept; what the file omits is left as it is. Every check runs before the first write, so a bad
 * file writes nothing; only changed items are written, so applying the same file twice writes nothing.
 */
export interface ApplyOptions {
  newKey?: boolean;
}

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

  const plan = planApply(file, existing, existingContacts);
  const id = existing?.account.id ?? randomUUID();
  const firstIds = await reserveIds(id, plan.newIds);
  const built = plan.build(id, firstIds);

  if (!existing) {
    await createAccount(built.config.account);
  } else if (!sameAccount(existing.account, built.config.account)) {
    await putAccount(built.config.account);
  }
  await putConfigEntities(id, built.changed);
  for (const contact of built.newContacts) await createContact(id, contact);
  for (const contact of built.changedContacts) await updateContact(id, contact);

  const key = !existing || options.newKey ? await issueApiKey(id) : undefined;
  return presentState(built.config, key?.api_key, built.contacts);
}

function sameAccount(a: Account, b: Account): boolean {
  return isDeepStrictEqual({ ...a, updatedAt: '' }, { ...b, updatedAt: '' });
}

type Counts = Partial<Record<Sequence, number>>;

/** Validates cross-references and decides what is new, before anything is written. */
function planApply(file: AccountFile, existing: AccountConfig | undefined, existingContacts: Contact[]) {
  const problems: FileProblem[] = [];
  const byLower = <T>(list: T[], key: (t: T) => string) =>
    new Map(list.map((t) => [key(t).toLowerCase(), t]));

  // Duplicates inside the file would make matching by natural key ambiguous.
  const checkUnique = <T>(section: string, list: T[] | undefined, key: (t: T) => string, field: string) => {
    const seen = new Set<string>();
    list?.forEach((item, i) => {
      const k = key(item).toLowerCase();
      if (seen.has(k))
        problems.push({ path: `${section}[${i}].${field}`, rule: `duplicates an earlier entry` });
      seen.add(k);
    });
  };
  checkUnique('teams', file.teams, (t) => t.name, 'name');
  checkUnique('agents', file.agents, (a) => a.email, 'email');
  checkUnique('categories', file.categories, (c) => c.slug, 'slug');
  checkUnique('pipelines', file.pipelines, (p) => p.name, 'name');
  checkUnique('contacts', file.contacts, (c) => c.email, 'email');
  file.pipelines?.forEach((p, i) => {
    checkUnique(`pipelines[${i}].stages`, p.stages, (s) => s.name, 'name');
  });

  const teamNames = new Set(
    [...(existing?.teams ?? []), ...(file.teams ?? [])].map((t) => t.name.toLowerCase()),
  );
  file.agents?.forEach((agent, i) => {
    agent.teams?.forEach((team, j) => {
      if (!teamNames.has(team.toLowerCase()))
        problems.push({ path: `agents[${i}].teams[${j}]`, rule: 'names no team' });
    });
  });
  file.categories?.forEach((category, i) => {
    if (category.default_team && !teamNames.has(category.default_team.toLowerCase())) {
      problems.push({ path: `categories[${i}].default_team`, rule: 'names no team' });
    }
  });
  const categorySlugs = new Set(
    [...DEFAULT_CATEGORIES, ...(existing?.categories ?? []), ...(file.categories ?? [])].map((c) => c.slug),
  );
  const hasCalendar =
    file.business_hours !== undefined ? file.business_hours !== null : !!existing?.account.businessHours;
  file.sla_policies?.forEach((policy, i) => {
    if (policy.category && !categorySlugs.has(policy.category)) {
      problems.push({ path: `sla_policies[${i}].category`, rule: 'names no category' });
    }
    if (policy.business_hours && !hasCalendar) {
      problems.push({
        path: `sla_policies[${i}].business_hours`,
        rule: 'needs the account to have business_hours',
      });
    }
  });

  const fileDefaults = (file.pipelines ?? []).flatMap((p, i) => (p.default ? [i] : []));
  if (fileDefaults.length > 1) {
    problems.push({
      path: `pipelines[${fileDefaults[1]}].default`,
      rule: 'only one pipeline can be the default',
    });
  }
  for (const i of fileDefaults) {
    if (file.pipelines?.[i]?.active === false) {
      problems.push({ path: `pipelines[${i}].active`, rule: 'the default pipeline must be active' });
    }
  }

  // What is new, so that ids can be reserved in one update before building.
  const oldTeams = byLower(existing?.teams ?? [], (t) => t.name);
  const oldAgents = byLower(existing?.agents ?? [], (a) => a.email);
  const oldCategories = new Map((existing?.categories ?? []).map((c) => [c.slug, c]));
  const oldPipelines = byLower(existing?.pipelines ?? [], (p) => p.name);
  const oldContacts = byLower(existingContacts, (c) => c.email);
  const wantedCategorySlugs = [
    ...new Set([...DEFAULT_CATEGORIES, ...(file.categories ?? [])].map((c) => c.slug)),
  ];
  const filePipelines =
    file.pipelines ?? (existing ? [] : [{ ...DEFAULT_PIPELINE, default: true, active: true }]);

  const newIds: Counts = {
    team: (file.teams ?? []).filter((t) => !oldTeams.has(t.name.toLowerCase())).length,
    agent: (file.agents ?? []).filter((a) => !oldAgents.has(a.email.toLowerCase())).length,
    category: wantedCategorySlugs.filter((slug) => !oldCategories.has(slug)).length,
    pipeline: filePipelines.filter((p) => !oldPipelines.has(p.name.toLowerCase())).length,
    stage: filePipelines
      .map((p) => {
        const old = oldPipelines.get(p.name.toLowerCase());
        const oldStages = new Set(old?.stages.map((s) => s.name.toLowerCase()));
        return p.stages.filter((s) => !oldStages.has(s.name.toLowerCase())).length;
      })
      .reduce((a, b) => a + b, 0),
    contact: (file.contacts ?? []).filter((c) => !oldContacts.has(c.email.toLowerCase())).length,
  };

  // Exactly one active default pipeline must remain once the file is applied.
  let provisionalId = 0; // new pipelines and stages need distinct ids to be told apart here
  const mergedPipelines = mergePipelines(existing?.pipelines ?? [], filePipelines, () => --provisionalId);
  if (problems.length === 0 && mergedPipelines.filter((p) => p.active && p.isDefault).length !== 1) {
    problems.push({ path: 'pipelines', rule: 'exactly one active pipeline must be the default' });
  }
  if (problems.length > 0) throw new AccountFileInvalid(problems);

  return {
    newIds,
    build(accountId: string, first: Counts) {
      const next = sequenceCursor(first);
      const timestamp = now();

      const teams = mergeBy(
        existing?.teams ?? [],
        file.teams ?? [],
        (t) => t.name.toLowerCase(),
        (t, old) => ({
          id: old?.id ?? next('team'),
          name: t.name,
        }),
      );
      const teamId = (name: string) =>
        teams.find((t) => t.name.toLowerCase() === name.toLowerCase())?.id ?? null;

      const agents = mergeBy(
        existing?.agents ?? [],
        file.agents ?? [],
        (a) => a.email.toLowerCase(),
        (a, old) => ({
          id: old?.id ?? next('agent'),
          email: a.email,
          name: a.name,
          active: a.active ?? true,
          teamIds: (a.teams ?? []).map((name) => teamId(name)).filter((id): id is number => id !== null),
        }),
      );

      const fileCategories = new Map((file.categories ?? []).map((c) => [c.slug, c]));
      const categoryInputs = wantedCategorySlugs.map((slug) => {
        const fromFile = fileCategories.get(slug);
        const fallback = DEFAULT_CATEGORIES.find((c) => c.slug === slug);
        return {
          slug,
          name: fromFile?.name,
          defaultTeam: fromFile?.default_team,
          fallbackName: fallback?.name ?? slug,
        };
      });
      const categories = mergeBy(
        existing?.categories ?? [],
        categoryInputs,
        (c) => c.slug,
        (c, old) => ({
          id: old?.id ?? next('category'),
          slug: c.slug,
          name: c.name ?? old?.name ?? c.fallbackName,
          defaultTeamId:
            c.defaultTeam === undefined
              ? (old?.defaultTeamId ?? null)
              : c.defaultTeam === null
                ? null
                : teamId(c.defaultTeam),
        }),
      );

      const pipelines = mergePipelines(existing?.pipelines ?? [], filePipelines, next);

      const account: Account = {
        id: accountId,
        slug: file.slug,
        name: file.name,
        plan: file.plan,
        suspended: file.suspended ?? existing?.account.suspended ?? false,
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
        createdAt: existing?.account.createdAt ?? timestamp,
        updatedAt: timestamp,
      };
      if (existing && sameAccount(existing.account, account)) account.updatedAt = existing.account.updatedAt;

      const changed: ConfigEntity[] = [
        ...changedOf('team', existing?.teams ?? [], teams),
        ...changedOf('agent', existing?.agents ?? [], agents),
        ...changedOf('category', existing?.categories ?? [], categories),
        ...changedOf('pipeline', existing?.pipelines ?? [], pipelines),
      ];

      const newContacts: Contact[] = [];
      const changedContacts: Contact[] = [];
      const contacts = (file.contacts ?? []).map((c) => {
        const old = oldContacts.get(c.email.toLowerCase());
        const contact: Contact = {
          id: old?.id ?? next('contact'),
          uuid: old?.uuid ?? randomUUID(),
          email: old?.email ?? c.email,
          firstName: c.first_name,
          lastName: c.last_name ?? null,
          phone: c.phone ?? null,
          createdAt: old?.createdAt ?? timestamp,
        };
        if (!old) newContacts.push(contact);
        else if (!isDeepStrictEqual(old, contact)) changedContacts.push(contact);
        return contact;
      });

      return {
        config: { account, teams, agents, categories, pipelines } satisfies AccountConfig,
        changed,
        newContacts,
        changedContacts,
        contacts,
      };
    },
  };
}

type PipelineInput = {
  name: string;
  default?: boolean | undefined;
  active?: boolean | undefined;
  stages: { name: string; color: string; probability: number }[];
};

/** Pipelines after the file: matched by name, stages by name within their pipeline, in the file's order. */
function mergePipelines(old: Pipeline[], input: PipelineInput[], next: (s: Sequence) => number): Pipeline[] {
  const fileDefault = input.find((p) => p.default)?.name.toLowerCase();
  const merged = mergeBy(
    old,
    input,
    (p) => p.name.toLowerCase(),
    (p, prior) => {
      const oldStages = new Map(prior?.stages.map((s) => [s.name.toLowerCase(), s]));
      const stages: Stage[] = p.stages.map((s, i) => ({
        id: oldStages.get(s.name.toLowerCase())?.id ?? next('stage'),
        name: s.name,
        color: s.color.toUpperCase(),
        probability: s.probability,
        position: i + 1,
      }));
      return {
        id: prior?.id ?? next('pipeline'),
        name: p.name,
        isDefault: prior?.isDefault ?? false,
        active: p.active ?? true,
        stages,
      };
    },
  );
  // New objects, never the existing ones: changedOf compares against those to decide what to write.
  if (fileDefault !== undefined) {
    return merged.map((p) => ({ ...p, isDefault: p.name.toLowerCase() === fileDefault }));
  }
  if (merged.some((p) => p.isDefault)) return merged;
  const first = merged.find((p) => p.active);
  return merged.map((p) => (p === first ? { ...p, isDefault: true } : p));
}

/** Existing entities updated from the file where their key matches, plus the file's new ones, by id. */
function mergeBy<Old extends { id: number }, In>(
  old: Old[],
  input: In[],
  keyOf: (item: Old | In) => string,
  build: (item: In, prior: Old | undefined) => Old,
): Old[] {
  const byKey = new Map(old.map((o) => [keyOf(o), o]));
  const result = new Map(old.map((o) => [o.id, o]));
  for (const item of input) {
    const built = build(item, byKey.get(keyOf(item)));
    result.set(built.id, built);
  }
  return [...result.values()].sort((a, b) => a.id - b.id);
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

function sequenceCursor(first: Counts) {
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
    resolutionMinutes: input.resolution_minutes,
    businessHours: input.business_hours ?? false,
  };
}

/** The account state printed by `apply` (operations.md). */
function presentState(config: AccountConfig, apiKey: string | undefined, contacts: Contact[]) {
  const { account } = config;
  return {
    account: { id: account.id, slug: account.slug, name: account.name, plan: account.plan },
    ...(apiKey ? { api_key: apiKey } : {}),
    teams: config.teams.map((t: Team) => ({ id: t.id, name: t.name })),
    agents: config.agents.map((a: Agent) => ({
      id: a.id,
      email: a.email,
      name: a.name,
      active: a.active,
      team_ids: a.teamIds,
    })),
    categories: config.categories.map((c: Category) => ({
      id: c.id,
      slug: c.slug,
      name: c.name,
      default_team_id: c.defaultTeamId,
    })),
    pipelines: config.pipelines.map((p: Pipeline) => ({
      id: p.id,
      name: p.name,
      is_default: p.isDefault,
      active: p.active,
      stages: p.stages.map((s) => ({ ...s })),
    })),
    contacts: contacts.map((c) => ({
      id: c.id,
      uuid: c.uuid,
      email: c.email,
      first_name: c.firstName,
      last_name: c.lastName,
      phone: c.phone,
    })),
  };
}
