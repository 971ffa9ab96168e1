import { describe, expect, it } from 'vitest';
import { AccountFileInvalid, parseAccountFile } from '#lib/accounts/account-file.ts';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { loadAccountConfig } from '#lib/data/accounts.ts';
import { createTestAccount } from '#test/support/accounts.ts';

const problemsOf = (raw: unknown) => {
  try {
    parseAccountFile(raw);
    return [];
  } catch (error) {
    if (!(error instanceof AccountFileInvalid)) throw error;
    return error.problems.map((p) => `${p.path}: ${p.rule}`);
  }
};

describe('account file validation', () => {
  const base = { slug: 'a-b', name: 'A', plan: 'pro' };

  it('needs only slug, name and plan', () => {
    expect(problemsOf(base)).toEqual([]);
    expect(problemsOf({})).toEqual(
      expect.arrayContaining([expect.stringMatching(/^slug: /), expect.stringMatching(/^name: /)]),
    );
  });

  it.each([
    [{ plan: 'gold' }, 'plan: must be one of startup, pro, enterprise'],
    [{ ticket_prefix: 'T' }, 'ticket_prefix: must be 2 to 10 capital letters'],
    [{ ticket_prefix: 'abc' }, 'ticket_prefix: must be 2 to 10 capital letters'],
    [{ pipelines: [{ name: 'P', stages: [] }] }, 'pipelines[0].stages: must have at least one stage'],
    [
      { pipelines: [{ name: 'P', stages: [{ name: 'S', color: 'red', probability: 5 }] }] },
      'pipelines[0].stages[0].color: must be a hex colour #RRGGBB',
    ],
    [
      { business_hours: { time_zone: 'Mars/Olympus', weekly: {} } },
      'business_hours.time_zone: must be an IANA time zone',
    ],
    [
      { business_hours: { time_zone: 'UTC', weekly: { mon: [['17:00', '09:00']] } } },
      'business_hours.weekly.mon[0]: must open before it closes',
    ],
    [
      { business_hours: { time_zone: 'UTC', weekly: {}, holidays: ['2026-02-30'] } },
      'business_hours.holidays[0]: must be a real calendar date YYYY-MM-DD',
    ],
    [
      { sla_policies: [{ name: 'x', resolution_minutes: 0 }] },
      'sla_policies[0].resolution_minutes: must be at least 1',
    ],
    [{ pipline: [] }, 'pipline: is not a known field'],
  ])('rejects %j with its path and rule', (patch, expected) => {
    expect(problemsOf({ ...base, ...patch })).toContain(expected);
  });
});

describe('apply', () => {
  it('updates in place by natural key and keeps every id', async () => {
    const account = await createTestAccount({
      teams: [{ name: 'Billing' }],
      agents: [{ email: 'Ann@X.test', name: 'Ann', teams: ['Billing'] }],
      pipelines: [{ name: 'Sales', stages: [{ name: 'Lead', color: '#111111', probability: 10 }] }],
    });
    const updated = await applyAccountFile({
      slug: account.slug,
      name: 'Renamed',
      plan: 'enterprise',
      teams: [{ name: 'Billing' }, { name: 'Tech' }],
      agents: [{ email: 'ann@x.test', name: 'Ann B', teams: ['Tech'], active: false }],
      pipelines: [
        {
          name: 'Sales',
          stages: [
            { name: 'Intro', color: '#222222', probability: 5 },
            { name: 'Lead', color: '#111111', probability: 20 },
          ],
        },
      ],
    });
    expect(updated.account).toEqual({
      id: account.accountId,
      slug: account.slug,
      name: 'Renamed',
      plan: 'enterprise',
      rate_limit_per_minute: 1_000_000, // the test account's own limit: a file without the field keeps it
    });
    expect(updated.teams).toEqual([
      { id: account.teams[0]?.id, name: 'Billing' },
      { id: expect.any(Number), name: 'Tech' },
    ]);
    const tech = updated.teams[1]?.id;
    expect(updated.agents).toEqual([
      { id: account.agents[0]?.id, email: 'ann@x.test', name: 'Ann B', active: false, team_ids: [tech] },
    ]);
    const lead = account.pipelines[0]?.stages[0];
    expect(updated.pipelines[0]?.stages).toEqual([
      { id: expect.any(Number), name: 'Intro', color: '#222222', probability: 5, position: 1 },
      { id: lead?.id, name: 'Lead', color: '#111111', probability: 20, position: 2 },
    ]);
  });

  it('moves the default to the pipeline the file names, keeping exactly one', async () => {
    const account = await createTestAccount();
    const state = await applyAccountFile({
      slug: account.slug,
      name: account.account.name,
      plan: 'pro',
      pipelines: [
        { name: 'Partners', default: true, stages: [{ name: 'Intro', color: '#123456', probability: 1 }] },
      ],
    });
    expect(state.pipelines.filter((p) => p.is_default).map((p) => p.name)).toEqual(['Partners']);
  });

  it('stores the moved default, so the old default is no longer one and the next apply succeeds', async () => {
    const account = await createTestAccount();
    const file = { slug: account.slug, name: account.account.name, plan: 'pro' };
    const partners = { name: 'Partners', stages: [{ name: 'Intro', color: '#123456', probability: 1 }] };
    await applyAccountFile({ ...file, pipelines: [{ ...partners, default: true }] });
    const stored = await loadAccountConfig(account.accountId);
    expect(stored?.pipelines.map((p) => [p.name, p.isDefault])).toEqual([
      ['Sales', false],
      ['Partners', true],
    ]);
    const again = await applyAccountFile({ ...file, pipelines: [partners] });
    expect(again.pipelines.filter((p) => p.is_default).map((p) => p.name)).toEqual(['Partners']);
  });

  it('refuses to leave no active default pipeline, writing nothing', async () => {
    const account = await createTestAccount();
    const before = await loadAccountConfig(account.accountId);
    await expect(
      applyAccountFile({
        slug: account.slug,
        name: account.account.name,
        plan: 'pro',
        pipelines: [
          { name: 'Sales', active: false, stages: [{ name: 'Lead', color: '#123456', probability: 1 }] },
        ],
      }),
    ).rejects.toThrow('pipelines: exactly one active pipeline must be the default');
    expect(await loadAccountConfig(account.accountId)).toEqual(before);
  });
});
