import { describe, expect, it } from 'vitest';
import { AccountFileInvalid, parseAccountFile } from '#lib/accounts/account-file.ts';
import { checkAccountFile } from '#lib/accounts/check-account-file.ts';
import { DEFAULT_CATEGORIES, DEFAULT_PIPELINE } from '#lib/accounts/defaults.ts';
import { type IdCounts, mergeAccount, newIdCounts } from '#lib/accounts/merge-account.ts';
import type { AccountConfig, Contact } from '#lib/accounts/types.ts';

/**
 * The merge of `apply` as a pure function: no DynamoDB here. `apply` below runs the same steps as
 * applyAccountFile (check, count, allocate, merge); a first apply's new ids start at 101 in each sequence,
 * a later one's at 201, as a sequence hands them out.
 */
const FIRST_ID = 101;
const T1 = '2026-11-22T10:00:00.000000Z';
const FIRST = { firstId: FIRST_ID, timestamp: T1 };
const LATER_ID = 201;
const LATER = { firstId: LATER_ID, timestamp: '2026-11-23T10:00:00.000000Z' };
const base = { slug: 'acme', name: 'Acme', plan: 'pro' };

interface Existing {
  config: AccountConfig;
  contacts: Contact[];
}

function apply(raw: Record<string, unknown>, existing?: Existing, { firstId, timestamp } = FIRST) {
  const file = parseAccountFile({ ...base, ...raw });
  // A copy, as a read from the table would give: the merge must not lean on shared objects.
  const before = structuredClone(existing);
  checkAccountFile(file, before?.config);
  const counts = newIdCounts(file, before?.config, before?.contacts ?? []);
  const firstIds: IdCounts = Object.fromEntries(
    Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([sequence]) => [sequence, firstId]),
  );
  let uuids = 0;
  const merged = mergeAccount(file, before?.config, before?.contacts ?? [], {
    accountId: before?.config.account.id ?? 'acc-1',
    firstIds,
    timestamp,
    newUuid: () => `uuid-${++uuids}`,
  });
  expect(before).toEqual(existing); // the inputs are left as they were
  return { counts, ...merged };
}

const stored = (result: ReturnType<typeof apply>): Existing => ({
  config: result.config,
  contacts: result.contacts,
});

const problemsOf = (raw: Record<string, unknown>, existing?: Existing) => {
  try {
    apply(raw, existing);
    return [];
  } catch (error) {
    if (!(error instanceof AccountFileInvalid)) throw error;
    return error.problems.map((p) => `${p.path}: ${p.rule}`);
  }
};

const stages = (...names: string[]) => names.map((name) => ({ name, color: '#aabbcc', probability: 10 }));
const defaultsOf = (config: AccountConfig) =>
  config.pipelines.filter((p) => p.active && p.isDefault).map((p) => p.name);

describe('mergeAccount: a new account', () => {
  it('gets the defaults: categories, one default pipeline with positioned stages, settings', () => {
    const result = apply({});
    expect(result.counts).toEqual({ team: 0, agent: 0, category: 11, pipeline: 1, stage: 6, contact: 0 });
    expect(result.config.categories).toEqual(
      DEFAULT_CATEGORIES.map((c, i) => ({
        id: FIRST_ID + i,
        slug: c.slug,
        name: c.name,
        defaultTeamId: null,
      })),
    );
    expect(result.config.pipelines).toEqual([
      {
        id: FIRST_ID,
        name: DEFAULT_PIPELINE.name,
        isDefault: true,
        active: true,
        stages: DEFAULT_PIPELINE.stages.map((s, i) => ({ ...s, id: FIRST_ID + i, position: i + 1 })),
      },
    ]);
    expect(result.config.account).toEqual({
      id: 'acc-1',
      ...base,
      suspended: false,
      rateLimitPerMinute: null,
      ticketPrefix: 'TKT',
      defaultPriority: 'medium',
      autoAssignment: { enabled: false, method: 'round_robin' },
      businessHours: null,
      slaPolicies: [],
      createdAt: T1,
      updatedAt: T1,
    });
    expect(result.accountChanged).toBe(true);
    expect(result.changed.map((e) => e.type)).toEqual([...Array(11).fill('category'), 'pipeline']);
  });

  it("renames a default category from the file and adds the file's own after the defaults", () => {
    const result = apply({
      categories: [
        { slug: 'bug', name: 'Defect' },
        { slug: 'legal', name: 'Legal' },
      ],
    });
    expect(result.counts.category).toBe(12);
    expect(result.config.categories.find((c) => c.slug === 'bug')?.name).toBe('Defect');
    expect(result.config.categories.at(-1)).toEqual({
      id: FIRST_ID + 11,
      slug: 'legal',
      name: 'Legal',
      defaultTeamId: null,
    });
  });

  it('makes the first active pipeline the default when the file names none', () => {
    const result = apply({
      pipelines: [
        { name: 'Old', active: false, stages: stages('Gone') },
        { name: 'Sales', stages: stages('Lead') },
        { name: 'Renewals', stages: stages('Talks') },
      ],
    });
    expect(result.config.pipelines.map((p) => [p.name, p.isDefault])).toEqual([
      ['Old', false],
      ['Sales', true],
      ['Renewals', false],
    ]);
  });
});

describe('mergeAccount: matching by natural key', () => {
  const first = apply({
    teams: [{ name: 'Billing' }],
    agents: [{ email: 'Ann@X.test', name: 'Ann', teams: ['Billing'] }],
    categories: [{ slug: 'refunds', name: 'Refunds', default_team: 'Billing' }],
    pipelines: [{ name: 'Sales', stages: stages('Lead', 'Won') }],
    contacts: [{ email: 'Kim@Client.test', first_name: 'Kim' }],
  });

  it('keeps the ids of matched entities and gives new ones the reserved ids', () => {
    const second = apply(
      {
        teams: [{ name: 'BILLING' }, { name: 'Tech' }],
        agents: [{ email: 'ann@x.test', name: 'Ann B', teams: ['billing'] }],
        categories: [{ slug: 'refunds', name: 'Money back' }],
        pipelines: [{ name: 'sales', stages: stages('Intro', 'lead', 'Won') }],
        contacts: [{ email: 'kim@client.test', first_name: 'Kimberly' }],
      },
      stored(first),
      LATER,
    );
    expect(second.counts).toEqual({ team: 1, agent: 0, category: 0, pipeline: 0, stage: 1, contact: 0 });
    expect(second.config.teams).toEqual([
      { id: FIRST_ID, name: 'BILLING' },
      { id: LATER_ID, name: 'Tech' },
    ]);
    expect(second.config.agents).toEqual([
      { id: FIRST_ID, email: 'ann@x.test', name: 'Ann B', active: true, teamIds: [FIRST_ID] },
    ]);
    const refunds = first.config.categories.find((c) => c.slug === 'refunds');
    expect(second.config.categories.find((c) => c.slug === 'refunds')).toEqual({
      id: refunds?.id,
      slug: 'refunds',
      name: 'Money back',
      defaultTeamId: FIRST_ID, // the file leaves default_team out: kept
    });
    const [lead, won] = first.config.pipelines[0]?.stages ?? [];
    expect(second.config.pipelines[0]?.stages.map((s) => [s.id, s.name, s.position])).toEqual([
      [LATER_ID, 'Intro', 1],
      [lead?.id, 'lead', 2],
      [won?.id, 'Won', 3],
    ]);
    expect(second.newContacts).toEqual([]);
    expect(second.changedContacts).toEqual([
      { ...first.contacts[0], firstName: 'Kimberly', updatedAt: LATER.timestamp },
    ]);
  });

  it('yields no changed entity for the same file applied again, and keeps updatedAt', () => {
    const again = apply(
      {
        teams: [{ name: 'Billing' }],
        agents: [{ email: 'Ann@X.test', name: 'Ann', teams: ['Billing'] }],
        categories: [{ slug: 'refunds', name: 'Refunds', default_team: 'Billing' }],
        pipelines: [{ name: 'Sales', stages: stages('Lead', 'Won') }],
        contacts: [{ email: 'Kim@Client.test', first_name: 'Kim' }],
      },
      stored(first),
      LATER,
    );
    expect(again.counts).toEqual({ team: 0, agent: 0, category: 0, pipeline: 0, stage: 0, contact: 0 });
    expect(again.accountChanged).toBe(false);
    expect(again.changed).toEqual([]);
    expect(again.newContacts).toEqual([]);
    expect(again.changedContacts).toEqual([]);
    expect(again.config).toEqual(first.config);
    expect(again.config.account.updatedAt).toBe(T1);
  });

  it('leaves what the file omits as it is', () => {
    const minimal = apply({}, stored(first), LATER);
    expect(minimal.config).toEqual(first.config);
    expect(minimal.changed).toEqual([]);
    expect(minimal.contacts).toEqual([]);
  });
});

describe('check and merge: the default pipeline', () => {
  const sales = { name: 'Sales', stages: stages('Lead') };
  const partners = { name: 'Partners', stages: stages('Intro') };
  const existing = stored(apply({ pipelines: [sales] }));

  it('moves the default to the pipeline the file names, writing the one that loses it', () => {
    const moved = apply({ pipelines: [{ ...partners, default: true }] }, existing, LATER);
    expect(moved.config.pipelines.map((p) => [p.name, p.isDefault])).toEqual([
      ['Sales', false],
      ['Partners', true],
    ]);
    expect(moved.changed.map((e) => [e.type, e.value.id])).toEqual([
      ['pipeline', FIRST_ID],
      ['pipeline', LATER_ID],
    ]);
  });

  it('keeps the existing default when the file names none', () => {
    const kept = apply({ pipelines: [partners] }, existing, LATER);
    expect(defaultsOf(kept.config)).toEqual(['Sales']);
  });

  it.each([
    [
      'deactivates the default without naming another',
      { pipelines: [{ ...sales, active: false }, partners] },
      ['pipelines: exactly one active pipeline must be the default'],
    ],
    [
      'names two defaults',
      {
        pipelines: [
          { ...sales, default: true },
          { ...partners, default: true },
        ],
      },
      ['pipelines[1].default: only one pipeline can be the default'],
    ],
    [
      'names an inactive default',
      { pipelines: [{ ...partners, default: true, active: false }] },
      ['pipelines[0].active: the default pipeline must be active'],
    ],
  ])('refuses a file that %s', (_, file, problems) => {
    expect(problemsOf(file, existing)).toEqual(problems);
  });

  it('refuses a new account whose pipelines are all inactive', () => {
    expect(problemsOf({ pipelines: [{ ...sales, active: false }] })).toEqual([
      'pipelines: exactly one active pipeline must be the default',
    ]);
  });
});

describe("check and merge: agents' teams", () => {
  const existing = stored(apply({ teams: [{ name: 'Billing' }] }));

  it("resolves team names to ids, the account's and the file's new ones, case-insensitively", () => {
    const result = apply(
      {
        teams: [{ name: 'Tech' }],
        agents: [
          { email: 'ann@x.test', name: 'Ann', teams: ['billing', 'TECH'] },
          { email: 'bob@x.test', name: 'Bob', active: false },
        ],
        categories: [{ slug: 'bug', name: 'Bug', default_team: 'Tech' }],
      },
      existing,
      LATER,
    );
    expect(result.config.agents).toEqual([
      { id: LATER_ID, email: 'ann@x.test', name: 'Ann', active: true, teamIds: [FIRST_ID, LATER_ID] },
      { id: LATER_ID + 1, email: 'bob@x.test', name: 'Bob', active: false, teamIds: [] },
    ]);
    expect(result.config.categories.find((c) => c.slug === 'bug')?.defaultTeamId).toBe(LATER_ID);
  });

  it('refuses a team name that is neither in the file nor in the account, with its path', () => {
    expect(
      problemsOf({ agents: [{ email: 'ann@x.test', name: 'Ann', teams: ['Billing', 'Ghost'] }] }, existing),
    ).toEqual(['agents[0].teams[1]: names no team']);
  });
});
