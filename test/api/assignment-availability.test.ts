import { describe, expect, it } from 'vitest';
import { ASSIGNMENT_METHODS, type AssignmentMethod } from '#lib/accounts/types.ts';
import { formatTimestamp } from '#lib/time.ts';
import { agentsFile } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { peopleAccount } from '#test/support/people.ts';
import { assigneeCounts as tally, ticketBody, ticketsThrough } from '#test/support/tickets.ts';

/**
 * Availability and capacity in automatic assignment (decisions.md, "People: agents, teams and organizations"):
 * every method takes only agents that are active, available (an away agent whose `status_until` has passed is)
 * and below their capacity; a team whose active agents all fail that keeps its tickets unassigned, a team with no
 * active agent falls back to the account; three creates racing for an agent's last place give them one; a manual
 * assignment may pass a capacity.
 */
const gateway = useGateway();
const clock = useManualClock();
const { create, patch } = ticketsThrough(gateway, ticketBody());

type Assigned = { assignee: { id: number } | null; uuid: string };

async function setUp(method: AssignmentMethod, file: Record<string, unknown> = {}) {
  const people = await peopleAccount(gateway, {
    auto_assignment: { enabled: true, method },
    agents: agentsFile(3),
    ...file,
  });
  const { account, call } = people;
  const ids = account.agents.map((a) => a.id);
  const set = async (id: number | undefined, body: Record<string, unknown>) => {
    const answer = await call('PATCH', `/api/agents/${id}`, body);
    expect(answer.status, answer.text).toBe(200);
    return answer.body.data;
  };
  const createOne = (fields: Record<string, unknown> = {}): Promise<Assigned> =>
    create(account.apiKey, fields);
  const createMany = async (n: number, fields: Record<string, unknown> = {}) => {
    const made: Assigned[] = [];
    for (let i = 0; i < n; i++) made.push(await createOne(fields));
    return made;
  };
  const racing = (n: number) => Promise.all(Array.from({ length: n }, () => createOne()));
  /** Gives agent `id` a ticket by hand (PATCH assignee_id): fills a capacity without automatic assignment. */
  const handTo = async (id: number | undefined) => {
    const ticket = await createOne();
    const answer = await patch(account.apiKey, ticket.uuid, { assignee_id: id });
    expect(answer.status, answer.text).toBe(200);
    return answer.body.ticket as Assigned;
  };
  return { ...people, ids, set, createOne, createMany, racing, handTo };
}

const inMinutes = (minutes: number) => formatTimestamp(clock().nowUs() + minutes * 60_000_000);

describe.each(ASSIGNMENT_METHODS)('automatic assignment (%s) takes only available agents', (method) => {
  it('skips away, offline and retired agents', async () => {
    const { ids, set, createMany } = await setUp(method, { agents: agentsFile(4) });
    await set(ids[0], { status: 'away' });
    await set(ids[1], { status: 'offline', status_until: inMinutes(30) });
    await set(ids[3], { active: false });
    expect(tally(await createMany(4))).toEqual({ [ids[2] as number]: 4 });
  });

  it('takes an away agent once their status_until has passed, and none while nobody is available', async () => {
    const { ids, set, createOne } = await setUp(method, { agents: agentsFile(2) });
    await set(ids[0], { status: 'away', status_until: inMinutes(10) });
    await set(ids[1], { status: 'offline' });
    expect((await createOne()).assignee).toBeNull();
    await clock().advance(10 * 60_000 + 1);
    expect((await createOne()).assignee?.id).toBe(ids[0]);
  });

  it('skips an agent at their capacity, and leaves the ticket unassigned when everyone is full', async () => {
    const { ids, set, createMany, handTo } = await setUp(method, { agents: agentsFile(2) });
    await set(ids[0], { capacity: 1 });
    await set(ids[1], { capacity: 4 });
    await handTo(ids[0]);
    const made = await createMany(5);
    expect(tally(made)).toEqual({ [ids[1] as number]: 4 });
    expect(made.filter((t) => t.assignee === null)).toHaveLength(1);
  });

  it('three creates racing for the one free place of an agent with capacity 1 give them exactly one', async () => {
    const { ids, set, racing } = await setUp(method, { agents: agentsFile(1) });
    await set(ids[0], { capacity: 1 });
    const made = await racing(3);
    expect(tally(made)).toEqual({ [ids[0] as number]: 1 });
  });

  it('the racing creates that lose the last place go to another candidate', async () => {
    const { ids, set, racing } = await setUp(method, { agents: agentsFile(2) });
    await set(ids[0], { capacity: 1 });
    const made = await racing(3);
    expect(made.every((t) => t.assignee !== null)).toBe(true);
    expect(tally(made)[ids[0] as number] ?? 0).toBeLessThanOrEqual(1);
  });
});

describe('the team rule', () => {
  const teamFile = {
    teams: [{ name: 'Tech' }, { name: 'Gone' }],
    agents: [
      { email: 't1@desk.test', name: 'T1', teams: ['Tech'] },
      { email: 't2@desk.test', name: 'T2', teams: ['Tech'] },
      { email: 'g1@desk.test', name: 'G1', teams: ['Gone'], active: false },
      { email: 'a@desk.test', name: 'A' },
    ],
    categories: [
      { slug: 'bug', name: 'Bug', default_team: 'Tech' },
      { slug: 'old', name: 'Old', default_team: 'Gone' },
    ],
  };

  it.each(ASSIGNMENT_METHODS)(
    '%s: a team whose active agents are all away keeps its tickets unassigned',
    async (method) => {
      const { ids, set, createOne } = await setUp(method, teamFile);
      await set(ids[0], { status: 'away' });
      await set(ids[1], { status: 'offline' });
      expect((await createOne({ category_slug: 'bug' })).assignee).toBeNull();
      expect((await createOne({ category_slug: 'old' })).assignee?.id).toBe(ids[3]);
    },
  );

  it.each(ASSIGNMENT_METHODS)(
    '%s: a team whose available agents are all full keeps its tickets unassigned',
    async (method) => {
      const { ids, set, createOne, handTo } = await setUp(method, teamFile);
      await set(ids[0], { status: 'away' });
      await set(ids[1], { capacity: 1 });
      await handTo(ids[1]);
      expect((await createOne({ category_slug: 'bug' })).assignee).toBeNull();
    },
  );
});

describe('manual assignment', () => {
  it('may pass an agent capacity (PATCH assignee_id)', async () => {
    const { ids, set, handTo, call } = await setUp('least_busy', { agents: agentsFile(1) });
    await set(ids[0], { capacity: 1 });
    await handTo(ids[0]);
    const second = await handTo(ids[0]);
    expect(second.assignee?.id).toBe(ids[0]);
    const agent = await call('GET', `/api/agents/${ids[0]}`);
    expect(agent.body.data).toMatchObject({ capacity: 1, open_tickets: 2 });
  });
});
