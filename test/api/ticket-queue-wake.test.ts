import { describe, expect, it } from 'vitest';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { dueFreedWindow } from '#lib/data/tickets/freed.ts';
import { queuePass } from '#lib/tickets/queue-runner.ts';
import { useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';
import { peopleAccount } from '#test/support/people.ts';
import { queuesAsked } from '#test/support/queue.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';
import { ticketBody, ticketsThrough } from '#test/support/tickets.ts';

/**
 * A team that loses its last active agent wakes its waiting tickets at once (docs/decisions.md, "The queue": the
 * team wake): its tickets are every available account agent's from then on (the team rule's fallback), and the
 * next queue pass hands them to those with room, each once, without waiting for one of them to free up. And an
 * agent's turn asks a bounded number of agentless teams' queues, every one of them in time.
 */
const gateway = useGateway();
const clock = useManualClock();
const { create } = ticketsThrough(gateway, ticketBody());

const file = {
  auto_assignment: { enabled: true, method: 'round_robin' },
  teams: [{ name: 'Tech' }],
  agents: [
    { email: 't1@desk.test', name: 'T1', teams: ['Tech'] },
    { email: 'a@desk.test', name: 'A' },
    { email: 'b@desk.test', name: 'B' },
  ],
  categories: [{ slug: 'bug', name: 'Bug', default_team: 'Tech' }],
};

type Event = { type: string; data: { object: { uuid?: string } } };

/** Three tickets waiting for Tech, whose only agent T1 is away (no fallback while they are active); A and B idle. */
async function threeWaitingForTech(prepare?: (s: Prepared) => Promise<void>) {
  const people = await peopleAccount(gateway, file);
  const { account, call, events } = people;
  const [t1, a, b] = account.agents.map((x) => x.id) as [number, number, number];
  const patch: Patch = async (path, body) => {
    const answer = await call('PATCH', path, body);
    expect(answer.status, answer.text).toBe(200);
  };
  await patch(`/api/agents/${t1}`, { status: 'away' });
  await prepare?.({ a, b, patch, key: account.apiKey });
  const waiting: { uuid: string; assignee: unknown }[] = [];
  for (let i = 0; i < 3; i++) {
    waiting.push(await create(account.apiKey, { category_slug: 'bug' }));
    await clock().advance(1_000);
  }
  for (const t of waiting) expect(t.assignee).toBeNull();
  // The runner at rest first: the agents' own freeings (their creation) served, Tech's tickets not theirs.
  clock();
  await queuePass();
  const uuids = waiting.map((t) => t.uuid);
  const assignees = () =>
    Promise.all(
      uuids.map(async (u) => (await call('GET', `/api/tickets/${u}`)).body.data.assignee?.id ?? null),
    );
  expect(await assignees()).toEqual([null, null, null]);
  /** Each waiting ticket's `ticket.updated` events: one when it is handed out once. */
  const updates = async () => {
    const all = (await events()) as Event[];
    return uuids.map(
      (u) => all.filter((e) => e.type === 'ticket.updated' && e.data.object.uuid === u).length,
    );
  };
  const open = async (agent: number) =>
    (await call('GET', `/api/agents/${agent}`)).body.data.open_tickets as number;
  const wakes = async () =>
    (await dueFreedWindow(clock().nowMs(), new Map())).entries.filter(
      (e) => e.accountId === account.accountId && e.agentId === null,
    );
  const tech = ((await call('GET', '/api/teams')).body.data as { id: number }[])[0]?.id as number;
  return { ...people, t1, a, b, tech, patch, assignees, updates, open, wakes };
}
type Patch = (path: string, body: Record<string, unknown>) => Promise<void>;
type Prepared = { a: number; b: number; patch: Patch; key: string };

describe("a team's last active agent gone", () => {
  it('retired while three tickets wait: the next pass hands them to the idle account agents, each once', async () => {
    const s = await threeWaitingForTech();
    await s.patch(`/api/agents/${s.t1}`, { active: false });
    await queuePass();
    for (const taker of await s.assignees()) expect([s.a, s.b]).toContain(taker);
    expect(await s.updates()).toEqual([1, 1, 1]);
    expect((await s.open(s.a)) + (await s.open(s.b))).toBe(3);
    expect(await s.wakes()).toEqual([]);
  });

  it("taken out through the team's agent_ids: the same", async () => {
    const s = await threeWaitingForTech();
    await s.patch(`/api/teams/${s.tech}`, { agent_ids: [] });
    await queuePass();
    for (const taker of await s.assignees()) expect([s.a, s.b]).toContain(taker);
    expect(await s.updates()).toEqual([1, 1, 1]);
    expect((await s.open(s.a)) + (await s.open(s.b))).toBe(3);
  });

  it('retired by the account file (apply): the same', async () => {
    const s = await threeWaitingForTech();
    const { slug } = s.account;
    const agents = file.agents.map((a) => (a.email === 't1@desk.test' ? { ...a, active: false } : a));
    await applyAccountFile({ slug, name: `Test ${slug}`, plan: 'pro', ...file, agents });
    await queuePass();
    for (const taker of await s.assignees()) expect([s.a, s.b]).toContain(taker);
    expect(await s.updates()).toEqual([1, 1, 1]);
  });

  it('nobody with room: the wake is deleted, nothing assigned; the next agent freed takes them', async () => {
    let full = '';
    const s = await threeWaitingForTech(async ({ a, b, patch, key }) => {
      // A away, B full with a ticket of no team (theirs at create: A is away).
      await patch(`/api/agents/${a}`, { status: 'away' });
      await patch(`/api/agents/${b}`, { capacity: 1 });
      full = (await create(key, {})).uuid;
    });
    await s.patch(`/api/agents/${s.t1}`, { active: false });
    expect(await s.wakes()).toHaveLength(1);
    await queuePass();
    expect(await s.wakes()).toEqual([]);
    expect(await s.assignees()).toEqual([null, null, null]);
    // B resolves theirs: their own freeing serves Tech's queue (the fallback), one ticket (capacity 1).
    const resolved = await s.call('PATCH', `/api/tickets/${full}`, { status: 'resolved' });
    expect(resolved.status, resolved.text).toBe(200);
    await queuePass();
    expect((await s.assignees()).filter((id) => id === s.b)).toHaveLength(1);
  });

  it.each(['lost-answer', 'refused'] as const)(
    'a store fault (%s) at the wake’s hand-over: each ticket still assigned once',
    async (mode) => {
      const s = await threeWaitingForTech();
      await s.patch(`/api/agents/${s.t1}`, { active: false });
      const { operations, result } = await withFault(
        { operation: 'TransactWriteItems', after: 'TransactWriteItems', mode },
        () => queuePass(),
      );
      // The second hand-over failed (its ticket assigned all the same when only its answer was lost), and the turn
      // read again: three hand-overs landed, one more commit when the failed one was refused.
      const commits = operations.filter((o) => o === 'TransactWriteItems').length;
      expect(commits).toBe(mode === 'refused' ? 4 : 3);
      expect(result.assigned).toBe(mode === 'refused' ? 3 : 2);
      // A failed turn's entry waits RETRY_MS: the next passes serve what is left.
      await clock().advance(6_000);
      await queuePass();
      for (const taker of await s.assignees()) expect([s.a, s.b]).toContain(taker);
      expect(await s.updates()).toEqual([1, 1, 1]);
      expect((await s.open(s.a)) + (await s.open(s.b))).toBe(3);
    },
  );

  it('a turn that dies before its delete leaves the wake: the next pass finds the queue empty, nothing twice', async () => {
    const s = await threeWaitingForTech();
    await s.patch(`/api/agents/${s.t1}`, { active: false });
    const { result } = await withFault({ operation: 'DeleteItem', mode: 'lost-request' }, () => queuePass());
    // The turn failed at its end: the wake moved 5 s on (RETRY_MS), the tickets handed out before it.
    expect(result.failed).toBe(1);
    for (const taker of await s.assignees()) expect([s.a, s.b]).toContain(taker);
    expect(await s.wakes()).toEqual([]);
    await clock().advance(6_000);
    expect(await s.wakes()).toHaveLength(1);
    expect((await queuePass()).assigned).toBe(0);
    expect(await s.wakes()).toEqual([]);
    expect(await s.updates()).toEqual([1, 1, 1]);
    expect((await s.open(s.a)) + (await s.open(s.b))).toBe(3);
  });
});

describe('the agentless teams an agent’s turn asks', () => {
  it('at most 20 a turn; a team beyond them is served in a later turn', async () => {
    const teams = Array.from({ length: 22 }, (_, i) => ({ name: `Team ${i}` }));
    const { account, call } = await peopleAccount(gateway, {
      auto_assignment: { enabled: true, method: 'round_robin' },
      teams,
      agents: [{ email: 'a@desk.test', name: 'A' }],
      categories: teams.map((t, i) => ({ slug: `c${i}`, name: `C${i}`, default_team: t.name })),
    });
    const a = account.agents[0]?.id as number;
    expect((await call('PATCH', `/api/agents/${a}`, { status: 'away' })).status).toBe(200);
    for (let i = 0; i < teams.length; i++) await create(account.apiKey, { category_slug: `c${i}` });
    clock();
    await queuePass();
    const waiting = async () =>
      (await call('GET', '/api/tickets?assignee=unassigned&sort=queue')).body.meta.total as number;
    expect(await waiting()).toBe(22);
    expect((await call('PATCH', `/api/agents/${a}`, { status: 'available' })).status).toBe(200);
    // One queue head a team: 20 agentless teams' and the account's own (tickets without a team).
    const first = await queuesAsked(account.accountId, () => queuePass());
    expect(first.size).toBeLessThanOrEqual(21);
    expect(await waiting()).toBe(2);
    const second = await queuesAsked(account.accountId, () => queuePass());
    expect(second.size).toBeLessThanOrEqual(21);
    expect(await waiting()).toBe(0);
  });
});

describe('a team wake racing other changes', () => {
  it('two passes serving the wake at once, agents of capacity 1: each takes one ticket, none twice, one still waits', async () => {
    const s = await threeWaitingForTech(async ({ a, b, patch }) => {
      await patch(`/api/agents/${a}`, { capacity: 1 });
      await patch(`/api/agents/${b}`, { capacity: 1 });
    });
    await s.patch(`/api/agents/${s.t1}`, { active: false });
    await Promise.all([queuePass(), queuePass()]);
    const taken = await s.assignees();
    expect(taken.filter((id) => id === s.a)).toHaveLength(1);
    expect(taken.filter((id) => id === s.b)).toHaveLength(1);
    expect(taken.filter((id) => id === null)).toHaveLength(1);
    expect([await s.open(s.a), await s.open(s.b)]).toEqual([1, 1]);
    expect((await s.updates()).sort()).toEqual([0, 1, 1]);
  });

  it('the team’s agent back while its wake hands out: the hand-over in flight lands, the rest wait for the team', async () => {
    const s = await threeWaitingForTech();
    await s.patch(`/api/agents/${s.t1}`, { active: false });
    const [first] = (await s.call('GET', `/api/tickets?assignee=unassigned&team_id=${s.tech}&sort=queue`))
      .body.data as { uuid: string }[];
    beforeCallOnce('TransactWriteItemsCommand', first?.uuid as string, () =>
      s.patch(`/api/agents/${s.t1}`, { active: true }),
    );
    await queuePass();
    const taken = await s.assignees();
    expect(taken.filter((id) => id !== null)).toHaveLength(1);
    expect(await s.updates()).toEqual(taken.map((id) => (id === null ? 0 : 1)));
    expect(await s.wakes()).toEqual([]);
    // T1 (away) is Tech's again: its tickets wait for them, not for the account's agents.
    await clock().advance(60_000);
    await queuePass();
    expect((await s.assignees()).filter((id) => id !== null)).toHaveLength(1);
  });
});

describe('a team’s last two agents retired at once', () => {
  it('each change read the other still active: the team is left with none all the same, and its tickets are handed out', async () => {
    const { account, call } = await peopleAccount(gateway, {
      ...file,
      agents: [
        { email: 't1@desk.test', name: 'T1', teams: ['Tech'] },
        { email: 't2@desk.test', name: 'T2', teams: ['Tech'] },
        { email: 'a@desk.test', name: 'A' },
      ],
    });
    const [t1, t2, a] = account.agents.map((x) => x.id) as [number, number, number];
    const patch = async (id: number, body: Record<string, unknown>) => {
      const answer = await call('PATCH', `/api/agents/${id}`, body);
      expect(answer.status, answer.text).toBe(200);
    };
    await patch(t1, { status: 'away' });
    await patch(t2, { status: 'away' });
    const waiting = [await create(account.apiKey, { category_slug: 'bug' })];
    waiting.push(await create(account.apiKey, { category_slug: 'bug' }));
    clock();
    await queuePass();
    // T1's retirement decided (T2 active: Tech keeps an agent); before its commit, T2's, which reads T1 active.
    beforeCallOnce('TransactWriteItemsCommand', 't1@desk.test', () => patch(t2, { active: false }));
    await patch(t1, { active: false });
    const active = async (id: number) => (await call('GET', `/api/agents/${id}`)).body.data.active;
    expect([await active(t1), await active(t2)]).toEqual([false, false]);
    await queuePass();
    const assignees = await Promise.all(
      waiting.map(async (t) => (await call('GET', `/api/tickets/${t.uuid}`)).body.data.assignee?.id ?? null),
    );
    expect(assignees).toEqual([a, a]);
  });
});
