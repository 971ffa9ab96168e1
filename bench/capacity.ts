import type { APIGatewayProxyResult } from 'aws-lambda';
import { handler as updateContact } from '#functions/contacts-update.ts';
import { handler as createDeal } from '#functions/deals-create.ts';
import { handler as updateDeal } from '#functions/deals-update.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { capacityTicketBody, capacityUpdate } from '#test/support/capacity-shapes.ts';
import { callerOf, lambdaContext, proxyEvent, routeEvent, ticketEvent } from '#test/support/events.ts';
import { type ItemWrite, measureItemWrites } from '#test/support/item-sizes.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';

/**
 * The capacity model's inputs (docs/capacity.md), measured: every item each kind of change writes, with realistic
 * content (a 3 KB ticket with 5 custom fields; 200 and 1,000 agents; a pipeline board of 20 stages × 5
 * currencies), its size before and after, and the write units DynamoDB charges for it (test/support/item-sizes.ts
 * reads each item around the write: DynamoDB Local reports neither). An item is **shared** when the same item is
 * written by the same kind of change to two different objects of the account: it bounds the account's rate of
 * that change (one item takes at most 1,000 write units a second, and transactions on it conflict).
 */
export interface ChangeCost {
  name: string;
  /** Set when the change cannot be made at all at this size (the answer it got instead). */
  failed?: string;
  items: number;
  writeUnits: number;
  shared: { shape: string; bytes: number; writeUnits: number }[];
  /** Every item of the first of the two measured requests. */
  writes: ItemWrite[];
}

const CURRENCIES = ['EUR', 'USD', 'GBP', 'CHF', 'JPY'];

async function expectOk(answer: Promise<APIGatewayProxyResult>): Promise<Record<string, unknown>> {
  const result = await answer;
  if (result.statusCode >= 300)
    throw new Error(`bench request answered ${result.statusCode}: ${result.body}`);
  return JSON.parse(result.body);
}

/** A change that cannot be made at all at this size: logged, and recorded with the answer it got instead. */
function failedCost(name: string, failed: string): ChangeCost {
  log(`  ${name.padEnd(46)} FAILS: ${failed}`);
  return { name, failed, items: 0, writeUnits: 0, shared: [], writes: [] };
}

/** Measures two requests of one kind on different objects; items both wrote are the shared ones. */
async function costOf(
  name: string,
  accountIds: string[],
  request: (n: number) => Promise<unknown>,
): Promise<ChangeCost> {
  let first: ItemWrite[];
  try {
    first = await measureItemWrites(() => request(0), accountIds);
  } catch (error) {
    return failedCost(name, (error as Error).message);
  }
  const second = await measureItemWrites(() => request(1), accountIds);
  const keyOf = (w: ItemWrite) => `${w.pk}\u0000${w.sk}`;
  const again = new Set(second.map(keyOf));
  const shared = first
    .filter((w) => again.has(keyOf(w)))
    .map((w) => ({ shape: w.shape, bytes: Math.max(w.bytesBefore, w.bytesAfter), writeUnits: w.writeUnits }));
  const cost: ChangeCost = {
    name,
    items: first.length,
    writeUnits: first.reduce((n, w) => n + w.writeUnits, 0),
    shared,
    writes: first,
  };
  log(
    `  ${name.padEnd(46)} items ${String(cost.items).padStart(3)}  write units ${String(cost.writeUnits).padStart(4)}  shared: ${
      shared.map((s) => `${s.shape} ${s.bytes} B ${s.writeUnits} WU`).join('; ') || 'none'
    }`,
  );
  return cost;
}

async function ticketCosts(agentCount: number, method: 'round_robin' | 'least_busy'): Promise<ChangeCost[]> {
  const agents = Array.from({ length: agentCount }, (_, i) => ({
    email: `agent${i}@capacity.test`,
    name: `Agent ${i}`,
  }));
  const acc = await benchAccount(`capacity-${method}-${agentCount}`, {
    agents,
    auto_assignment: { enabled: true, method },
    categories: [{ slug: 'invoices', name: 'Invoices' }],
    sla_policies: [{ name: 'All', resolution_minutes: 480 }],
  });
  const caller = callerOf(acc);
  const create = (n: number) =>
    expectOk(
      createTicket(
        proxyEvent({ method: 'POST', path: '/api/tickets', caller, body: capacityTicketBody(n) }),
        lambdaContext,
      ),
    );
  // Every agent holds open work, so the stats item carries a counter per agent as it does in a busy account.
  const tickets: string[] = [];
  try {
    for (let i = 0; i < agentCount; i++)
      tickets.push(((await create(i + 10)).ticket as { uuid: string }).uuid);
  } catch (error) {
    const reason = `after ${tickets.length} creates: ${(error as Error).message}`;
    return [failedCost(`create ticket (3 KB, ${method}, ${agentCount} agents)`, reason)];
  }
  const patch = (n: number) =>
    expectOk(
      updateTicket(
        ticketEvent('PATCH', tickets[n] ?? '', caller, capacityUpdate(acc.agents[agentCount - 1 - n]?.id)),
        lambdaContext,
      ),
    );
  const label = `${method === 'round_robin' ? 'round-robin' : 'least-busy'}, ${agentCount} agents`;
  return [
    await costOf(`create ticket (3 KB, ${label})`, [acc.accountId], create),
    await costOf(`update ticket (status, priority, assignee; ${agentCount} agents)`, [acc.accountId], patch),
  ];
}

async function dealCosts(): Promise<ChangeCost[]> {
  const stages = Array.from({ length: 20 }, (_, i) => ({
    name: `Stage ${i + 1}`,
    color: '#3b82f6',
    probability: Math.min(100, i * 5),
  }));
  const acc = await benchAccount('capacity-deals', { pipelines: [{ name: 'Sales', default: true, stages }] });
  const caller = callerOf(acc);
  const stageIds = (acc.pipelines[0]?.stages ?? []).map((s) => s.id);
  const create = (n: number, stage = stageIds[n % stageIds.length], currency = CURRENCIES[n % 5]) =>
    expectOk(
      createDeal(
        proxyEvent({
          method: 'POST',
          path: '/api/deals',
          caller,
          body: {
            name: `Annual plan ${n}`,
            amount: 4800 + n,
            currency,
            stage_id: stage,
            contact_email: `buyer${n % 40}@client.test`,
            contact_first_name: 'Nora',
            contact_last_name: `Buyer ${n % 40}`,
          },
        }),
        lambdaContext,
      ),
    );
  // The board holds a count and a sum for every stage × currency in use: 20 × 5.
  const deals: { uuid: string; contact: { uuid: string } }[] = [];
  for (const stage of stageIds) {
    for (const currency of CURRENCIES) {
      deals.push((await create(deals.length, stage, currency)).data as (typeof deals)[number]);
    }
  }
  const move = (n: number) =>
    expectOk(
      updateDeal(
        routeEvent('PATCH', '/api/deals/{deal}', { deal: deals[n]?.uuid ?? '' }, caller, {
          stage_id: stageIds[(n + 7) % stageIds.length],
          amount: 5200.5 + n,
        }),
        lambdaContext,
      ),
    );
  const rename = (n: number) =>
    expectOk(
      updateContact(
        routeEvent('PATCH', '/api/contacts/{contact}', { contact: deals[n]?.contact.uuid ?? '' }, caller, {
          last_name: `Renamed ${n}`,
        }),
        lambdaContext,
      ),
    );
  return [
    await costOf('create deal (20 stages × 5 currencies in use)', [acc.accountId], (n) => create(1000 + n)),
    await costOf('update deal (stage move and amount)', [acc.accountId], move),
    await costOf('update contact (rename)', [acc.accountId], rename),
  ];
}

/** `npm run bench -- --capacity`: the write cost of each kind of change, item by item. */
export async function runCapacityOnly(options: { endpoint: string }): Promise<void> {
  await runPart({
    file: 'results-capacity.json',
    mode: 'capacity model inputs',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async () => ({ changes: await measureCapacityInputs() }),
  });
}

async function measureCapacityInputs(): Promise<ChangeCost[]> {
  log('capacity model inputs: items written per change, real sizes, shared items');
  return [
    ...(await ticketCosts(200, 'round_robin')),
    ...(await ticketCosts(1000, 'round_robin')),
    ...(await ticketCosts(50, 'least_busy')),
    ...(await ticketCosts(200, 'least_busy')),
    ...(await dealCosts()),
  ];
}
