import { handler as listAgents } from '#functions/agents-list.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import type { Agent, Team } from '#lib/accounts/types.ts';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { benchAccount } from './lib/account.ts';
import { type EndpointResult, expectStatus, log, type Measure, measurer } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { handBackCost, handOverCost } from './lib/people-writes.ts';
import { TicketSeeder } from './lib/seed.ts';
import { round } from './lib/stats.ts';

/**
 * `npm run bench -- --people [--quick]` (docs/capacity.md, "People: agents and teams", quotes it; never published):
 * (a) an agent list page (`GET /api/agents?limit=100`, and filtered by `team_id`) at 100 and 1,000 agents, each
 * agent holding open work (its least-busy cell written); (b) a team's queue page (`GET /api/tickets?assignee=
 * unassigned&team_id=…&sort=queue`) at 1k, 10k and 100k tickets in the account (--quick stops at 10k), a fifth of
 * them waiting in that team's queue, seeded by the bench's bulk loader (bench/lib/seed.ts); latency, round trips,
 * items and read units (as DynamoDB Local reports them) per page; (c) the items and write units of a hand-over and
 * of a hand-back (bench/lib/people-writes.ts). To bench/runs/results-people.json. It reports, it asserts nothing.
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

/** Two teams, `count` agents alternating between them, two open tickets each (their cells as a busy account's). */
async function agentListPages(endpoint: Measure, count: number) {
  log(`agent list: ${count} agents`);
  const account = await benchAccount(`bench-people-agents-${count}`, {
    teams: [{ name: 'Tier 1' }, { name: 'Tier 2' }],
    agents: Array.from({ length: count }, (_, i) => ({
      email: `agent${i}@people.bench`,
      name: `Agent ${i}`,
      teams: [i % 2 ? 'Tier 2' : 'Tier 1'],
    })),
  });
  const config = await loadAccountConfig(account.accountId);
  if (!config) throw new Error('agent list account missing');
  await new TicketSeeder(account.accountId, config).seedTo(2 * count);
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
 * One account of 20 agents in two teams, grown to each size: every QUEUE_SHARE-th ticket unassigned in Tier 1
 * (open or in progress: waiting in its queue), the others assigned round the agents. Each size's pages of Tier 1's
 * queue, with the queue's total as the page gives it.
 */
async function queuePagesAt(endpoint: Measure, sizes: number[]) {
  const account = await benchAccount('bench-people-queue', {
    teams: [{ name: 'Tier 1' }, { name: 'Tier 2' }],
    agents: Array.from({ length: 20 }, (_, i) => ({
      email: `agent${i}@queue.bench`,
      name: `Agent ${i}`,
      teams: [i % 2 ? 'Tier 2' : 'Tier 1'],
    })),
  });
  const config = await loadAccountConfig(account.accountId);
  const tier1 = config?.teams[0];
  if (!config || !tier1) throw new Error('queue account missing');
  const agents = config.agents;
  const seeder = new TicketSeeder(account.accountId, config, (i) =>
    i % QUEUE_SHARE === 0
      ? { team: tier1 as Team, assignee: undefined }
      : { team: null, assignee: agents[i % agents.length] as Agent },
  );
  const caller = callerOf(account);
  const queue = { assignee: 'unassigned', team_id: String(tier1.id), sort: 'queue' };
  const shapes: [string, Record<string, string>][] = [
    ['team queue, page 1 of 25', { ...queue, per_page: '25' }],
    ['team queue, page 1 of 100', { ...queue, per_page: '100' }],
    ['team queue, page 4 of 25', { ...queue, per_page: '25', page: '4' }],
  ];
  const rows = [];
  for (const size of sizes) {
    const seedSeconds = round(await seeder.seedTo(size), 1);
    log(`team queue: ${size} tickets (seeded in ${seedSeconds} s)`);
    const list = (query: Record<string, string>) => () =>
      expectStatus(listTickets(proxyEvent({ path: '/api/tickets', caller, query }), lambdaContext), 200);
    const first = JSON.parse((await list(shapes[0]?.[1] ?? {})()).body);
    const pages = [];
    for (const [name, query] of shapes)
      pages.push({ name, query, ...figures(await endpoint(`${name} (${size})`, list(query))) });
    rows.push({ tickets: size, queued: first.meta?.total, seedSeconds, pages });
  }
  return rows;
}
