import { describe, expect, it } from 'vitest';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { createTestAccount } from '#test/support/accounts.ts';

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
