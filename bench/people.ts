import { handler as listAgents } from '#functions/agents-list.ts';
import { handler as updateAgent } from '#functions/agents-update.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';
import { benchAccount } from './lib/account.ts';
import { type EndpointResult, expectStatus, log, type Measure, measurer } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { agentEvent, expectOk, handBackCost, handOverCost } from './lib/people-writes.ts';
import { SEED, seedFields } from './lib/seed.ts';
import { round } from './lib/stats.ts';

/**
 * `npm run bench -- --people [--quick]` (docs/capacity.md, "People: agents and teams", quotes it; never published):
 * (a) an agent list page (`GET /api/agents?limit=100`, and filtered by `team_id`) at 100 and 1,000 agents, each
 * agent holding open work (its least-busy cell written); (b) a team's queue page (`GET /api/tickets?assignee=
 * unassigned&team_id=…&sort=queue`) in accounts of 1k, 10k and 100k tickets (--quick stops at 10k), a fifth of
 * them waiting in that team's queue; latency, round trips, items and read units (as DynamoDB Local reports them)
 * per page; (c) the items and write units of a hand-over and of a hand-back (bench/lib/people-writes.ts). Tickets
 * are seeded as their creates write them (test/support/ticket-seeder.ts: each create's own plan, written in
 * batches), so a page reads what it would read after real creates. To bench/runs/results-people.json. It reports,
 * it asserts nothing.
 */
const ITERATIONS = 30;
const QUEUE_SHARE = 5;

export async function runPeopleOnly(options: { quick: boolean; endpoint: string }) {
  return runPart({
    file: 'results-people.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async (floor) => {
      const endpoint = measurer(floor, ITERATIONS);
      // The runners' passes first: they serve every account's due entries, and the list accounts' agents are due.
      const handOver = await handOverCost();
      const handBack = await handBackCost();
      const agentLists = [];
      for (const agents of [100, 1_000]) agentLists.push(await agentListPages(endpoint, agents));
      const queuePages = await queuePagesAt(
        endpoint,
        options.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000],
      );
      return { agentLists, queuePages, handOver, handBack };
    },
  });
}

/** What a page shows of a measured endpoint (the operations are in the floor's terms, not needed here). */
const figures = (r: EndpointResult) => ({
  p50: r.p50,
  p99: r.p99,
  roundTrips: r.roundTrips,
  itemsRead: r.itemsRead,
  readUnits: r.capacity,
});

/** Ticket i's create body (the scaling suite's fields, bench/lib/seed.ts), with more. */
const ticketBody = (i: number, more: Record<string, unknown> = {}) => ({
  ...seedFields(i + 1),
  priority: SEED.priority(i + 1),
  ...more,
});

/** `count` agents alternating between Tier 1 and Tier 2, the account's tickets assigned round-robin. */
function peopleFile(count: number, domain: string) {
  return {
    auto_assignment: { enabled: true, method: 'round_robin' },
    teams: [{ name: 'Tier 1' }, { name: 'Tier 2' }],
    agents: Array.from({ length: count }, (_, i) => ({
      email: `agent${i}@${domain}`,
      name: `Agent ${i}`,
      teams: [i % 2 ? 'Tier 2' : 'Tier 1'],
    })),
  };
}

/** Two teams, `count` agents alternating between them, two open tickets each (their cells as a busy account's). */
async function agentListPages(endpoint: Measure, count: number) {
  log(`agent list: ${count} agents`);
  const account = await benchAccount(`bench-people-agents-${count}`, peopleFile(count, 'people.bench'));
  const config = await loadAccountConfig(account.accountId);
  if (!config) throw new Error('agent list account missing');
  // No team: round-robin over every agent, two creates each.
  await seedTickets(
    account.accountId,
    Array.from({ length: 2 * count }, (_, i) => ticketBody(i)),
  );
  const team = config.teams[0]?.id ?? 1;
  const ids = config.agents.map((a) => a.id).sort((a, b) => a - b);
  const caller = callerOf(account);
  const page = (query: Record<string, string>) => () =>
    expectStatus(listAgents(proxyEvent({ path: '/api/agents', caller, query }), lambdaContext), 200);
  const shapes: [string, Record<string, string>][] = [
    ['agents: first page of 100', { limit: '100' }],
    ['agents: first page of 100, team_id', { limit: '100', team_id: String(team) }],
    ['agents: page of 100 after the middle agent', { limit: '100', after: String(ids[count / 2 - 1]) }],
  ];
  const pages = [];
  for (const [name, query] of shapes)
    pages.push({ name, query, ...figures(await endpoint(`${name} (${count})`, page(query))) });
  return { agents: count, pages };
}

/**
 * Each size's pages of Tier 1's queue (an account each: the seeder seeds an account's first tickets), with the
 * queue's total as the page gives it.
 */
async function queuePagesAt(endpoint: Measure, sizes: number[]) {
  const shapes: [string, Record<string, string>][] = [
    ['team queue, page 1 of 25', { per_page: '25' }],
    ['team queue, page 1 of 100', { per_page: '100' }],
    ['team queue, page 4 of 25', { per_page: '25', page: '4' }],
  ];
  const rows = [];
  for (const size of sizes) {
    const { caller, tier1, seedSeconds } = await queueAccount(size);
    log(`team queue: ${size} tickets (seeded in ${seedSeconds} s)`);
    const queue = { assignee: 'unassigned', team_id: String(tier1), sort: 'queue' };
    const list = (query: Record<string, string>) => () =>
      expectStatus(
        listTickets(
          proxyEvent({ path: '/api/tickets', caller, query: { ...queue, ...query } }),
          lambdaContext,
        ),
        200,
      );
    const queued = JSON.parse((await list({})()).body).meta?.total;
    if (queued !== size / QUEUE_SHARE)
      throw new Error(`team queue set-up: ${queued} waiting, not as planned`);
    const pages = [];
    for (const [name, query] of shapes)
      pages.push({
        name,
        query: { ...queue, ...query },
        ...figures(await endpoint(`${name} (${size})`, list(query))),
      });
    rows.push({ tickets: size, queued, seedSeconds, pages });
  }
  return rows;
}

/**
 * An account of 20 agents in two teams holding `size` tickets: every QUEUE_SHARE-th in Tier 1's category, created
 * while Tier 1's agents are away (so it waits in the team's queue, as decisions.md has it), the others without a
 * team, assigned round-robin to the available agents (Tier 2's).
 */
async function queueAccount(size: number) {
  const account = await benchAccount(`bench-people-queue-${size}`, {
    ...peopleFile(20, 'queue.bench'),
    categories: [{ slug: 'tier-1', name: 'Tier 1 work', default_team: 'Tier 1' }],
  });
  const { accountId } = account;
  const config = await loadAccountConfig(accountId);
  const tier1 = config?.teams[0]?.id;
  if (!config || tier1 === undefined) throw new Error('queue account missing');
  for (const agent of config.agents.filter((a) => a.teamIds.includes(tier1)))
    await expectOk(updateAgent(agentEvent(accountId, agent.id, { status: 'away' }), lambdaContext));
  const started = performance.now();
  await seedTickets(
    accountId,
    Array.from({ length: size }, (_, i) =>
      ticketBody(i, i % QUEUE_SHARE === 0 ? { category_slug: 'tier-1' } : {}),
    ),
  );
  const seedSeconds = round((performance.now() - started) / 1000, 1);
  return { caller: callerOf(account), tier1, seedSeconds };
}
