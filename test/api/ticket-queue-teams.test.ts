import { describe, expect, it } from 'vitest';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { queuePass } from '#lib/tickets/queue-runner.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { peopleAccount } from '#test/support/people.ts';
import { whileQueueRuns } from '#test/support/queue.ts';
import { ticketBody, ticketsThrough } from '#test/support/tickets.ts';

/**
 * The queue of a team with no active agent at all (decisions.md, "People": such a team "falls back to the account's
 * agents, as before"): the hand-over gives its waiting tickets to a freed account agent, as a create for the team
 * would; a team with an active agent, however away or full, keeps its tickets. Across the queues a freed agent may
 * take from, the most urgent, then the oldest, goes first (docs/decisions.md, "The queue").
 */
const gateway = useGateway();
const clock = useManualClock();
const { create } = ticketsThrough(gateway, ticketBody());

const file = {
  auto_assignment: { enabled: true, method: 'round_robin' },
  teams: [{ name: 'Tech' }, { name: 'Ops' }],
  agents: [
    { email: 't1@desk.test', name: 'T1', teams: ['Tech'] },
    { email: 'a@desk.test', name: 'A' },
    { email: 'b@desk.test', name: 'B' },
  ],
  categories: [
    { slug: 'bug', name: 'Bug', default_team: 'Tech' },
    { slug: 'ops', name: 'Ops', default_team: 'Ops' },
  ],
};

type Shown = { uuid: string; assignee: { id: number } | null; team: { id: number } | null };

async function setUp() {
  const people = await peopleAccount(gateway, file);
  const { account, call } = people;
  const [t1, a, b] = account.agents.map((x) => x.id) as [number, number, number];
  const patch = async (agent: number, body: Record<string, unknown>) => {
    const answer = await call('PATCH', `/api/agents/${agent}`, body);
    expect(answer.status, answer.text).toBe(200);
  };
  const ticket = async (uuid: string) => (await call('GET', `/api/tickets/${uuid}`)).body.data as Shown;
  const resolve = async (uuid: string) => {
    const answer = await call('PATCH', `/api/tickets/${uuid}`, { status: 'resolved' });
    expect(answer.status, answer.text).toBe(200);
  };
  return { ...people, t1, a, b, patch, ticket, resolve };
}

/** Ops deleted, its category routed to no team first. */
async function deleteOps(account: { slug: string }, call: Call, ops: number) {
  const { slug } = account;
  const categories = [file.categories[0], { slug: 'ops', name: 'Ops', default_team: null }];
  await applyAccountFile({ slug, name: `Test ${slug}`, plan: 'pro', ...file, categories });
  const deleted = await call('DELETE', `/api/teams/${ops}`);
  expect(deleted.status, deleted.text).toBe(200);
}
type Call = Awaited<ReturnType<typeof setUp>>['call'];

describe('the queue of a team with no active agent', () => {
  it('a ticket waiting for a team whose only agent is then retired goes to a freed account agent within 60 s, once', async () => {
    const { account, t1, a, b, patch, ticket, resolve, call, events } = await setUp();
    await patch(a, { capacity: 1 });
    await patch(b, { capacity: 1 });
    await patch(t1, { status: 'away' });
    // A and B full (tickets without a team go to the account's agents: round-robin gives one each).
    const held = [await create(account.apiKey, {}), await create(account.apiKey, {})];
    expect(held.map((t) => t.assignee?.id).sort()).toEqual([a, b].sort());
    // T1 is away but active: the team's ticket waits, no fallback.
    const waiting = await create(account.apiKey, { category_slug: 'bug' });
    expect(waiting.assignee).toBeNull();
    await patch(t1, { active: false });
    await whileQueueRuns(clock, async () => {
      // Both freed at once: the ticket is one of theirs, exactly once.
      await Promise.all(held.map((t) => resolve(t.uuid)));
      await clock().advanceUntil(async () => (await ticket(waiting.uuid)).assignee !== null, {
        within: 60_000,
        label: "the retired agent's team's ticket handed to a freed account agent",
      });
      await clock().advance(10_000);
    });
    const taker = (await ticket(waiting.uuid)).assignee?.id;
    expect([a, b]).toContain(taker);
    const handed = (await events()).filter(
      (e) => e.type === 'ticket.updated' && e.data.object.uuid === waiting.uuid,
    );
    expect(handed).toHaveLength(1);
    const open = async (agent: number) =>
      (await call('GET', `/api/agents/${agent}`)).body.data.open_tickets as number;
    expect((await open(a)) + (await open(b))).toBe(1);
  });

  it('a team with an active agent away keeps its ticket from a freed account agent', async () => {
    const { account, t1, a, b, patch, ticket } = await setUp();
    await patch(t1, { status: 'away' });
    await patch(a, { status: 'away' });
    await patch(b, { active: false });
    const waiting = await create(account.apiKey, { category_slug: 'bug' });
    expect(waiting.assignee).toBeNull();
    // The control: a ticket of no team, which the freed agent may take, waits beside it.
    const noTeam = await create(account.apiKey, {});
    expect(noTeam.assignee).toBeNull();
    await patch(a, { status: 'available' });
    clock();
    await queuePass();
    expect((await ticket(noTeam.uuid)).assignee?.id).toBe(a);
    expect((await ticket(waiting.uuid)).assignee).toBeNull();
  });

  it('a freed agent takes the most urgent, then the oldest, across every queue they may serve', async () => {
    const { account, t1, a, b, patch, ticket } = await setUp();
    await patch(t1, { active: false });
    await patch(b, { active: false });
    await patch(a, { status: 'away', capacity: 2 });
    // Ops has never had an agent, Tech no active one: both fall back to the account, as the account's queue.
    const oldOps = await create(account.apiKey, { category_slug: 'ops', priority: 'medium' });
    await clock().advance(1_000);
    const newer = await create(account.apiKey, { priority: 'medium' });
    await clock().advance(1_000);
    const urgentTech = await create(account.apiKey, { category_slug: 'bug', priority: 'urgent' });
    for (const t of [oldOps, newer, urgentTech]) expect(t.assignee).toBeNull();
    await patch(a, { status: 'available' });
    clock();
    await queuePass();
    expect((await ticket(urgentTech.uuid)).assignee?.id).toBe(a);
    expect((await ticket(oldOps.uuid)).assignee?.id).toBe(a);
    expect((await ticket(newer.uuid)).assignee).toBeNull();
  });

  it('a resolved ticket of a team deleted since, reopened, waits in the account’s queue and a freed agent takes it', async () => {
    const { account, t1, a, b, patch, ticket, resolve, call, events } = await setUp();
    await patch(t1, { status: 'away' });
    await patch(a, { status: 'away' });
    await patch(b, { status: 'away' });
    // Ops has no agent: its ticket falls back to the account's, all away: it waits, unassigned.
    const made = await create(account.apiKey, { category_slug: 'ops' });
    expect(made.assignee).toBeNull();
    const ops = made.team?.id as number;
    await resolve(made.uuid);
    await deleteOps(account, call, ops);
    const reopened = await call('PATCH', `/api/tickets/${made.uuid}`, { status: 'open' });
    expect(reopened.status, reopened.text).toBe(200);
    expect(reopened.body.ticket.team).toBeNull();
    const reopening = (await events()).filter(
      (e) =>
        e.type === 'ticket.updated' && e.data.object.uuid === made.uuid && e.data.object.status === 'open',
    );
    expect(reopening.map((e) => (e.data.previous as { team?: { id: number } }).team?.id)).toEqual([ops]);
    expect(reopening[0]?.data.object.team).toBeNull();
    const queued = await call('GET', '/api/tickets?assignee=unassigned&team_id=none&sort=queue');
    expect((queued.body.data as Shown[]).map((t) => t.uuid)).toEqual([made.uuid]);
    await patch(a, { status: 'available' });
    clock();
    await queuePass();
    expect((await ticket(made.uuid)).assignee?.id).toBe(a);
  });
  it('an open ticket restored from the trash after its team was deleted waits in the account’s queue', async () => {
    const { account, t1, a, b, patch, call } = await setUp();
    for (const agent of [t1, a, b]) await patch(agent, { status: 'away' });
    const made = await create(account.apiKey, { category_slug: 'ops' });
    expect(made.assignee).toBeNull();
    expect((await call('DELETE', `/api/tickets/${made.uuid}`)).status).toBe(200);
    await deleteOps(account, call, made.team?.id as number);
    const restored = await call('POST', `/api/trash/${made.uuid}/restore`, {});
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body.data.team).toBeNull();
    const queued = await call('GET', '/api/tickets?assignee=unassigned&team_id=none&sort=queue');
    expect((queued.body.data as Shown[]).map((t) => t.uuid)).toEqual([made.uuid]);
  });
});
