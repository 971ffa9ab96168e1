import { describe, expect, it } from 'vitest';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { assigneeCounts as tally, ticketBody, ticketsThrough } from '#test/support/tickets.ts';

const gateway = useGateway();

const { create } = ticketsThrough(gateway, ticketBody());

describe('automatic assignment', () => {
  it('leaves tickets unassigned when assignment is disabled', async () => {
    const account = await createTestAccount({ agents: agentsFile(2) });
    expect((await create(account.apiKey)).assignee).toBeNull();
  });

  it('round-robin takes candidates in ascending id order, one per create', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'round_robin' },
      agents: [...agentsFile(3), { email: 'off@desk.test', name: 'Off', active: false }],
    });
    const ids = account.agents.filter((a) => a.active).map((a) => a.id);
    const assigned: number[] = [];
    for (let i = 0; i < 7; i++) assigned.push((await create(account.apiKey)).assignee.id);
    expect(assigned).toEqual([ids[0], ids[1], ids[2], ids[0], ids[1], ids[2], ids[0]]);
    const first = await create(account.apiKey);
    expect(first.assignee).toEqual({ id: ids[1], name: 'Agent 2', email: 'agent2@desk.test' });
  });

  it('least-busy picks the agent with the fewest open tickets, ties to the lowest id', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'least_busy' },
      agents: agentsFile(3),
    });
    const ids = account.agents.map((a) => a.id);
    const sequence: number[] = [];
    for (let i = 0; i < 6; i++) sequence.push((await create(account.apiKey)).assignee.id);
    expect(sequence).toEqual([ids[0], ids[1], ids[2], ids[0], ids[1], ids[2]]);
  });

  it('random stays among the candidates', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'random' },
      teams: [{ name: 'Tech' }],
      agents: [...agentsFile(2, { teams: ['Tech'] }), { email: 'other@desk.test', name: 'Other' }],
      categories: [{ slug: 'bug', name: 'Bug', default_team: 'Tech' }],
    });
    const tech = account.agents.filter((a) => a.team_ids.length > 0).map((a) => a.id);
    const tickets = await Promise.all(
      Array.from({ length: 12 }, () => create(account.apiKey, { category_slug: 'bug' })),
    );
    for (const t of tickets) expect(tech).toContain(t.assignee.id);
  });

  it('restricts candidates to the team, or all active agents when the team has none active', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'round_robin' },
      teams: [{ name: 'Billing' }, { name: 'Empty' }],
      agents: [
        { email: 'bill@desk.test', name: 'Bill', teams: ['Billing'] },
        { email: 'gen@desk.test', name: 'Gen' },
        { email: 'idle@desk.test', name: 'Idle', teams: ['Empty'], active: false },
      ],
      categories: [
        { slug: 'billing', name: 'Billing', default_team: 'Billing' },
        { slug: 'question', name: 'Question', default_team: 'Empty' },
      ],
    });
    const bill = account.agents.find((a) => a.name === 'Bill')?.id;
    for (let i = 0; i < 3; i++) {
      const t = await create(account.apiKey, { category_slug: 'billing' });
      expect(t.assignee.id).toBe(bill);
      expect(t.team.name).toBe('Billing');
    }
    const fallback = await Promise.all(
      Array.from({ length: 4 }, () => create(account.apiKey, { category_slug: 'question' })),
    );
    expect(Object.values(tally(fallback))).toEqual([2, 2]);
    expect(fallback[0].team.name).toBe('Empty');
  });

  it('leaves the ticket unassigned when there is no active agent', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'least_busy' },
      agents: agentsFile(1, { active: false }),
    });
    expect((await create(account.apiKey)).assignee).toBeNull();
  });
});
