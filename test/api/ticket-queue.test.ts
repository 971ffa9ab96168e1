import { describe, expect, it } from 'vitest';
import { agentsFile } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { peopleAccount } from '#test/support/people.ts';
import { ticketBody, ticketsThrough } from '#test/support/tickets.ts';

/**
 * The queue (decisions.md, "People: agents, teams and organizations"): an unassigned ticket waits in its team's
 * queue (the account's, without a team), served urgent, high, medium, low, then the oldest; `GET /api/tickets?
 * assignee=unassigned&team_id=…&sort=queue` lists it in that order with exact totals.
 */
const gateway = useGateway();
const clock = useManualClock();
const { create } = ticketsThrough(gateway, ticketBody());

const teamFile = {
  auto_assignment: { enabled: true, method: 'round_robin' },
  teams: [{ name: 'Tech' }],
  agents: [
    { email: 't1@desk.test', name: 'T1', teams: ['Tech'] },
    { email: 'a@desk.test', name: 'A' },
  ],
  categories: [{ slug: 'bug', name: 'Bug', default_team: 'Tech' }],
};

type Listed = { uuid: string; priority: string; team: { id: number } | null };

describe('sort=queue', () => {
  it('lists a team queue urgent first, then the oldest, with exact totals', async () => {
    const people = await peopleAccount(gateway, teamFile);
    const { account, call } = people;
    const [t1, a] = account.agents.map((x) => x.id);
    await call('PATCH', `/api/agents/${t1}`, { status: 'away' });
    await call('PATCH', `/api/agents/${a}`, { status: 'away' });
    const made: { uuid: string }[] = [];
    for (const priority of ['low', 'urgent', 'medium', 'urgent', 'high', 'low']) {
      made.push(await create(account.apiKey, { category_slug: 'bug', priority }));
      await clock().advance(1_000);
    }
    const untouched = await create(account.apiKey, { priority: 'urgent' });
    const teamId = ((await call('GET', '/api/teams')).body.data as { id: number }[])[0]?.id;
    const page = await call(
      'GET',
      `/api/tickets?assignee=unassigned&team_id=${teamId}&sort=queue&per_page=4`,
    );
    expect(page.status, page.text).toBe(200);
    expect(page.body.meta.total).toBe(6);
    const uuids = (page.body.data as Listed[]).map((t) => t.uuid);
    expect(uuids).toEqual([made[1], made[3], made[4], made[2]].map((t) => t?.uuid));
    const second = await call(
      'GET',
      `/api/tickets?assignee=unassigned&team_id=${teamId}&sort=queue&per_page=4&page=2`,
    );
    expect((second.body.data as Listed[]).map((t) => t.uuid)).toEqual([made[0], made[5]].map((t) => t?.uuid));
    const none = await call('GET', '/api/tickets?assignee=unassigned&team_id=none&sort=queue');
    expect(none.body.meta.total).toBe(1);
    expect((none.body.data as Listed[])[0]?.uuid).toBe(untouched.uuid);
    const all = await call('GET', '/api/tickets?assignee=unassigned&sort=queue');
    expect(all.body.meta.total).toBe(7);
    expect((all.body.data as Listed[])[0]?.uuid).toBe(made[1]?.uuid);
  });

  it('refuses team_id or sort=queue without assignee=unassigned', async () => {
    const { call } = await peopleAccount(gateway, { agents: agentsFile(1) });
    expect((await call('GET', '/api/tickets?team_id=1')).status).toBe(422);
    expect((await call('GET', '/api/tickets?sort=queue')).status).toBe(422);
    expect((await call('GET', '/api/tickets?assignee=someone')).status).toBe(422);
  });
});
