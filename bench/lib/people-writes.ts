import type { APIGatewayProxyResult } from 'aws-lambda';
import { handler as updateAgent } from '#functions/agents-update.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as getTicket } from '#functions/tickets-get.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { handBackPass } from '#lib/people/handback-runner.ts';
import { queuePass, runQueue } from '#lib/tickets/queue-runner.ts';
import { capacityTicketBody } from '#test/support/capacity-shapes.ts';
import { figuresOf } from '#test/support/dynamo-figures.ts';
import { callerOf, lambdaContext, proxyEvent, routeEvent, ticketEvent } from '#test/support/events.ts';
import { measureItemWrites } from '#test/support/item-sizes.ts';
import { benchAccount } from './account.ts';
import { log } from './measure.ts';
import { round } from './stats.ts';
import { StoreCalls } from './store-calls.ts';

/**
 * The people bench's writes (bench/people.ts): a hand-over (the queue runner's pass giving one waiting ticket to
 * an agent freed by a resolve) and a hand-back (a retired agent's open tickets unassigned by the hand-back
 * runner), each with the change that set it off. Write units are measured as bench/capacity.ts measures them
 * (test/support/item-sizes.ts: every item written read around its write, 1 unit a KB of the larger, twice in a
 * transaction); round trips from the calls (test/support/dynamo-figures.ts); read units as DynamoDB Local reports
 * them (bench/lib/store-calls.ts). Tickets are the capacity bench's (3 KB, 5 custom fields).
 */
let calls: StoreCalls | undefined;

export async function expectOk(answer: Promise<APIGatewayProxyResult>): Promise<Record<string, unknown>> {
  const result = await answer;
  if (result.statusCode >= 300)
    throw new Error(`bench request answered ${result.statusCode}: ${result.body}`);
  return JSON.parse(result.body);
}

/** A piece of work's store cost: items and write units by item, round trips, items read and read units. */
async function costOf(name: string, accountId: string, work: () => Promise<unknown>) {
  calls ??= new StoreCalls(dynamo);
  calls.start();
  let trips = 0;
  const writes = await measureItemWrites(async () => {
    trips = (await figuresOf(work)).roundTrips;
  }, [accountId]);
  const tallies = [...(calls.stop().values() ?? [])].flatMap((m) => [...m.values()]);
  const cost = {
    name,
    items: writes.length,
    writeUnits: writes.reduce((n, w) => n + w.writeUnits, 0),
    roundTrips: trips,
    calls: tallies.reduce((n, t) => n + t.calls, 0),
    itemsRead: tallies.reduce((n, t) => n + t.itemsRead, 0),
    readUnits: round(
      tallies.reduce((n, t) => n + t.readUnits, 0),
      1,
    ),
    writes: writes.map((w) => ({
      shape: w.shape,
      operation: w.operation,
      bytes: Math.max(w.bytesBefore, w.bytesAfter),
      writeUnits: w.writeUnits,
    })),
  };
  log(
    `  ${name.padEnd(52)} items ${cost.items}  WU ${cost.writeUnits}  RT ${cost.roundTrips}  read ${cost.itemsRead} (${cost.readUnits} RU)`,
  );
  return cost;
}

export const agentEvent = (accountId: string, id: number, body: Record<string, unknown>) =>
  routeEvent('PATCH', '/api/agents/{agent}', { agent: String(id) }, callerOf({ accountId }), body);

/**
 * An agent of capacity 1 in Tier 1 holds one ticket; a second of the team waits in its queue. The resolve of the
 * first writes the agent's freed entry; the runner's pass then hands the waiting ticket over.
 */
export async function handOverCost() {
  log('hand-over: a resolve frees an agent of capacity 1, the queue runner gives them the waiting ticket');
  const account = await benchAccount('bench-people-handover', {
    auto_assignment: { enabled: true, method: 'round_robin' },
    teams: [{ name: 'Tier 1' }],
    agents: [{ email: 'ann@handover.bench', name: 'Ann', teams: ['Tier 1'] }],
    categories: [{ slug: 'invoices', name: 'Invoices', default_team: 'Tier 1' }],
  });
  const { accountId } = account;
  const ann = account.agents[0]?.id ?? 0;
  await expectOk(updateAgent(agentEvent(accountId, ann, { capacity: 1 }), lambdaContext));
  const caller = callerOf(account);
  const create = async (n: number) =>
    (
      await expectOk(
        createTicket(
          proxyEvent({ method: 'POST', path: '/api/tickets', caller, body: capacityTicketBody(n) }),
          lambdaContext,
        ),
      )
    ).ticket as { uuid: string; assignee: { id: number } | null };
  const held = await create(1);
  const waiting = await create(2);
  if (held.assignee?.id !== ann || waiting.assignee !== null)
    throw new Error('hand-over set-up: not as planned');
  // Every due entry served (this account's agent creates, any other account's): the pass measured serves one.
  await runQueue(Date.now() + 60_000, { untilDrained: true });
  const resolve = await costOf('resolve that frees the agent (writes the freed entry)', accountId, () =>
    expectOk(updateTicket(ticketEvent('PATCH', held.uuid, caller, { status: 'resolved' }), lambdaContext)),
  );
  const pass = await costOf('queue runner pass: one hand-over', accountId, () => queuePass());
  const shown = await expectOk(getTicket(ticketEvent('GET', waiting.uuid, caller), lambdaContext));
  const handedTo = ((shown.ticket ?? shown.data) as { assignee: { id: number } | null }).assignee?.id;
  if (handedTo !== ann) throw new Error('hand-over: the pass measured did not hand the waiting ticket over');
  return { resolve, pass, handedTo };
}

/**
 * Ann, the only agent, holds `count` open tickets; her retirement (a PATCH) writes the hand-back, and the runner's
 * passes unassign every one (no other agent qualifies: each waits in the account's queue).
 */
async function handBackOf(count: number) {
  const account = await benchAccount(`bench-people-handback-${count}`, {
    auto_assignment: { enabled: true, method: 'round_robin' },
    agents: [{ email: 'ann@handback.bench', name: 'Ann' }],
    categories: [{ slug: 'invoices', name: 'Invoices' }],
  });
  const { accountId } = account;
  const ann = account.agents[0]?.id ?? 0;
  const caller = callerOf(account);
  for (let i = 0; i < count; i++)
    await expectOk(
      createTicket(
        proxyEvent({ method: 'POST', path: '/api/tickets', caller, body: capacityTicketBody(i) }),
        lambdaContext,
      ),
    );
  const retire = await costOf(`retirement of an agent with ${count} open tickets (PATCH)`, accountId, () =>
    expectOk(updateAgent(agentEvent(accountId, ann, { active: false }), lambdaContext)),
  );
  let passes = 0;
  const runner = await costOf(`hand-back runner: ${count} tickets unassigned`, accountId, async () => {
    for (let more = true; more; passes++) more = (await handBackPass()).more;
  });
  return {
    tickets: count,
    retire,
    runner: { ...runner, passes },
    writeUnitsPerTicket: round(runner.writeUnits / count, 1),
  };
}

export async function handBackCost() {
  log('hand-back: a retired agent’s open tickets unassigned');
  const one = await handBackOf(1);
  const many = await handBackOf(25);
  // What a ticket more costs: the step's own reads and saves are in both.
  const perTicket = round((many.runner.writeUnits - one.runner.writeUnits) / 24, 1);
  log(`  each ticket more: ${perTicket} WU`);
  return { one, many, marginalWriteUnitsPerTicket: perTicket };
}
