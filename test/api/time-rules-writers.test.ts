import { describe, expect, it } from 'vitest';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { runErasure } from '#lib/erasures/job.ts';
import { handBackPass } from '#lib/people/handback-runner.ts';
import { ruleSweepPass } from '#lib/rules/sweep-runner.ts';
import { breachPass } from '#lib/tickets/breaches.ts';
import { queuePass } from '#lib/tickets/queue-runner.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { peopleAccount } from '#test/support/people.ts';

/**
 * The ticket writers outside the rules' own changes keep the ticket's next time-rule moment (docs/rules.md, "Who
 * keeps the moment"): the queue's hand-over, a hand-back, a restore from the trash, an erasure. Each moves what a
 * time rule reads (the assignee and `updated_at`; the rules written while the ticket was in the trash; the
 * requester's address) and writes the moment
 * its new state gives in its own commit, so the rule fires then, not at the old moment (here: none), and once.
 */
const gateway = useGateway();
const clock = useManualClock();
const MINUTE = 60_000;

/** A due pass over the file's table: how many rules fired on each of `uuids` (others' tickets are not counted). */
async function firedOn(uuids: string[]): Promise<number[]> {
  const fired = new Map<string, number>();
  await breachPass({
    limit: 100_000,
    onRules: (_account, orderKey, count) => fired.set(orderKey, (fired.get(orderKey) ?? 0) + count),
  });
  return uuids.map((uuid) => fired.get(orderKeyOfUuid(uuid) as string) ?? 0);
}

/** A time rule on `since`, that tags a ticket `chased` once its `conditions` hold (and it is not chased yet). */
const chase = (since: string, afterMinutes: number, conditions: Record<string, unknown>[]) => ({
  name: 'Chase',
  on: 'time',
  time: { after_minutes: afterMinutes, since },
  conditions: { all: [...conditions, { field: 'tags', op: 'not_contains', value: 'chased' }] },
  actions: [{ type: 'add_tags', tags: ['chased'] }],
});

async function setUp(file: Record<string, unknown>) {
  const people = await peopleAccount(gateway, file);
  const { call } = people;
  const create = async () => {
    const made = await call('POST', '/api/tickets', {
      subject: 'S',
      description: 'd',
      requester_email: 'r@customer.example',
    });
    expect(made.status, made.text).toBe(201);
    return made.body.ticket.uuid as string;
  };
  const get = async (uuid: string) => (await call('GET', `/api/tickets/${uuid}`)).body.data;
  const rule = async (body: Record<string, unknown>) => {
    const made = await call('POST', '/api/rules', body);
    expect(made.status, made.text).toBe(201);
  };
  return { ...people, create, get, rule };
}

/** The rule fires on each ticket at the moment (+ a minute's rounding), not a minute before, and once. */
async function firesOnceAt(
  uuids: string[],
  minutes: number,
  get: (uuid: string) => Promise<{ tags: string[] }>,
) {
  await clock().advance((minutes - 1) * MINUTE);
  expect(await firedOn(uuids)).toEqual(uuids.map(() => 0));
  await clock().advance(2 * MINUTE);
  expect(await firedOn(uuids)).toEqual(uuids.map(() => 1));
  for (const uuid of uuids) expect((await get(uuid)).tags).toEqual(['chased']);
  await clock().advance(180 * MINUTE);
  expect(await firedOn(uuids)).toEqual(uuids.map(() => 0));
}

describe('writers outside the rules keep the next moment', () => {
  it('the queue hand-over: a rule on the new assignee fires an hour after the hand-over, once', async () => {
    const d = await setUp({
      auto_assignment: { enabled: true, method: 'round_robin' },
      agents: [{ email: 'a@desk.test', name: 'A' }],
    });
    const agent = d.account.agents[0]?.id as number;
    expect((await d.call('PATCH', `/api/agents/${agent}`, { status: 'away' })).status).toBe(200);
    await d.rule(chase('updated_at', 60, [{ field: 'assignee_id', op: 'is', value: agent }]));
    const uuid = await d.create();
    expect((await d.get(uuid)).assignee).toBeNull();
    // Unassigned: the rule's conditions do not hold, the ticket has no moment. The agent back half an hour on.
    await clock().advance(30 * MINUTE);
    expect(await firedOn([uuid])).toEqual([0]);
    expect((await d.call('PATCH', `/api/agents/${agent}`, { status: 'available' })).status).toBe(200);
    expect((await queuePass()).assigned).toBe(1);
    expect((await d.get(uuid)).assignee?.id).toBe(agent);
    await firesOnceAt([uuid], 60, d.get);
  });

  it('a retirement’s hand-back: a rule on unassigned tickets fires an hour after it, once, alone or together', async () => {
    const d = await setUp({
      agents: [
        { email: 'ann@desk.test', name: 'Ann' },
        { email: 'bob@desk.test', name: 'Bob' },
      ],
    });
    const [ann, bob] = d.account.agents.map((a) => a.id) as [number, number];
    await d.rule(chase('updated_at', 60, [{ field: 'assignee_id', op: 'is', value: null }]));
    // Ann's two are handed back in one commit, Bob's one alone (lib/people/handback.ts).
    const owned: [string, number][] = [];
    for (const agent of [ann, ann, bob]) {
      const uuid = await d.create();
      const moved = await d.call('PATCH', `/api/tickets/${uuid}`, { assignee_id: agent });
      expect(moved.status, moved.text).toBe(200);
      owned.push([uuid, agent]);
    }
    const uuids = owned.map(([uuid]) => uuid);
    await clock().advance(20 * MINUTE);
    for (const agent of [ann, bob]) {
      expect((await d.call('PATCH', `/api/agents/${agent}`, { active: false })).status).toBe(200);
    }
    while ((await handBackPass()).more);
    for (const uuid of uuids) expect((await d.get(uuid)).assignee).toBeNull();
    await firesOnceAt(uuids, 60, d.get);
  });

  it('a restore: a rule written while the ticket was in the trash fires at its moment on it, once', async () => {
    const d = await setUp({ agents: [{ email: 'a@desk.test', name: 'A' }] });
    const uuid = await d.create();
    await clock().advance(MINUTE);
    expect((await d.call('DELETE', `/api/tickets/${uuid}`)).status).toBe(200);
    await clock().advance(4 * MINUTE);
    await d.rule(chase('created_at', 120, [{ field: 'status', op: 'is', value: 'open' }]));
    // The rule's moment sweep, due seconds after the write, runs while the ticket is in the trash: it reads none.
    await clock().advance(10_000);
    while ((await ruleSweepPass()).more);
    await clock().advance(5 * MINUTE - 10_000);
    const restored = await d.call('POST', `/api/trash/${uuid}/restore`, {});
    expect(restored.status, restored.text).toBe(200);
    // Created 10 minutes ago: its moment is 110 minutes on.
    await firesOnceAt([uuid], 110, d.get);
  });

  it('an erasure: a rule on tickets whose requester was erased fires at its moment on theirs, once', async () => {
    const d = await setUp({ agents: [{ email: 'a@desk.test', name: 'A' }] });
    await d.rule(chase('created_at', 120, [{ field: 'requester_email', op: 'absent' }]));
    // The requester's address is there: the conditions do not hold, the ticket has no moment.
    const uuid = await d.create();
    await clock().advance(10 * MINUTE);
    const started = await d.call('POST', '/api/erasures', { email: 'r@customer.example' });
    expect(started.status, started.text).toBe(202);
    await runErasure(d.account.accountId, started.body.data.id as string);
    expect((await d.get(uuid)).requester).toMatchObject({ erased: true });
    await firesOnceAt([uuid], 110, d.get);
  });
});
