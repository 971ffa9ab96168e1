import { handler as createRule } from '#functions/rules-create.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { callerOf, lambdaContext, proxyEvent, ticketEvent } from '#test/support/events.ts';
import { benchAccount } from './lib/account.ts';
import { type EndpointResult, expectStatus, log, measurer } from './lib/measure.ts';
import { runPart } from './lib/part.ts';

/**
 * `npm run bench -- --rules [--quick]` (docs/rules.md and docs/capacity.md, "Rules and macros", quote it; never
 * published): a ticket create and a ticket update (a priority change) in accounts with 0, 100 and 1,000 active rules
 * (half `created`, half `updated`, five conditions each on subject, tags, priority, custom fields and requester, none
 * of which hold: every rule is looked at, none fires), the rules cache warm as in a busy container. What the
 * decisions ask: a change with 1,000 rules costs no round trip more than one with none, and its p50 is within 1.2×.
 * Then the same with one rule that fires (a tag and a note) beside 999, for what a firing adds. To
 * bench/runs/results-rules.json. It reports, it asserts nothing.
 */
const ITERATIONS = 40;

const conditions = (i: number) => ({
  all: [
    { field: 'subject', op: 'contains', value: `never-${i}` },
    { field: 'tags', op: 'contains', value: `tag-${i}` },
    { field: 'priority', op: 'in', value: ['low', 'urgent'] },
    { field: `custom_fields.code_${i % 7}`, op: 'is', value: `c${i}` },
    { field: 'requester_email', op: 'contains', value: `nobody-${i}@` },
  ],
});

const ruleBody = (i: number) => ({
  name: `Rule ${i}`,
  on: i % 2 ? 'updated' : 'created',
  conditions: conditions(i),
  actions: [
    { type: 'add_tags', tags: [`r${i}`] },
    { type: 'set', field: 'priority', value: 'high' },
  ],
});

const FIRING = {
  name: 'Tag every update',
  on: 'updated',
  conditions: { all: [{ field: 'priority', op: 'changed' }] },
  actions: [
    { type: 'add_tags', tags: ['touched'] },
    { type: 'note', body: 'Priority now {{ticket.status}}.' },
  ],
};

export async function runRulesOnly(options: { quick: boolean; endpoint: string }) {
  return runPart({
    file: 'results-rules.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async (floor) => {
      const endpoint = measurer(floor, options.quick ? 20 : ITERATIONS);
      const sizes = [];
      for (const rules of [0, 100, 1_000]) sizes.push(await changesWith(endpoint, rules, false));
      // 999 and the one that fires: 1,000 active, the most an account may have.
      const firing = await changesWith(endpoint, 999, true);
      return { sizes, firing };
    },
  });
}

const figures = (r: EndpointResult) => ({
  p50: r.p50,
  p99: r.p99,
  roundTrips: r.roundTrips,
  operations: r.operations,
  writeUnits: r.writeUnits,
});

async function changesWith(endpoint: ReturnType<typeof measurer>, count: number, firing: boolean) {
  log(`rules: ${count} active${firing ? ' + one that fires' : ''}`);
  const account = await benchAccount(`bench-rules-${count}${firing ? '-firing' : ''}`);
  const caller = callerOf(account);
  const started = performance.now();
  const bodies = [...Array.from({ length: count }, (_, i) => ruleBody(i)), ...(firing ? [FIRING] : [])];
  for (const body of bodies) {
    await expectStatus(
      createRule(proxyEvent({ method: 'POST', path: '/api/rules', caller, body }), lambdaContext),
      201,
    );
  }
  const seedSeconds = Math.round((performance.now() - started) / 100) / 10;
  const tickets: string[] = [];
  const create = async (i: number) => {
    const body = { subject: `Printer ${i}`, description: 'It jams.', requester_email: `r${i}@bench.example` };
    const answer = await expectStatus(
      createTicket(proxyEvent({ method: 'POST', path: '/api/tickets', caller, body }), lambdaContext),
      201,
    );
    tickets.push(JSON.parse(answer.body).ticket.uuid);
    return answer;
  };
  const created = await endpoint(`create ticket, ${count} rules${firing ? ' (+1 firing)' : ''}`, create);
  // Each update changes a ticket's priority (medium to low, then back on the next round): a change every time.
  let calls = 0;
  const update = () => {
    const n = calls++;
    const uuid = tickets[n % tickets.length] ?? '';
    const priority = Math.floor(n / tickets.length) % 2 ? 'medium' : 'low';
    return expectStatus(updateTicket(ticketEvent('PATCH', uuid, caller, { priority }), lambdaContext), 200);
  };
  const updated = await endpoint(`update ticket, ${count} rules${firing ? ' (+1 firing)' : ''}`, update);
  return { rules: bodies.length, seedSeconds, create: figures(created), update: figures(updated) };
}
