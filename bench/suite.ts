import { handler as authorizer } from '#functions/authorizer.ts';
import { handler as createDeal } from '#functions/deals-create.ts';
import { handler as listPipelines } from '#functions/pipelines-list.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as getTicket } from '#functions/tickets-get.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { ROOT } from '#infra/local/environment.ts';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, tokenEvent } from '#test/support/events.ts';
import { type DealResults, runDealSuite } from './deal-suite.ts';
import { type EventResults, runEventSuite } from './event-suite.ts';
import { benchAccount } from './lib/account.ts';
import { measureColdStarts } from './lib/cold-start.ts';
import { type Floor, measureTransaction } from './lib/floor.ts';
import { load, loopLoad, startServer } from './lib/http-load.ts';
import { type EndpointResult, expectStatus, log, measurer } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { SEED, TicketSeeder } from './lib/seed.ts';
import { round } from './lib/stats.ts';

interface Options {
  quick: boolean;
  endpoint: string;
}

/**
 * `--deals`: the floor and the deal part only (bench/deal-suite.ts), written to bench/results-deals.json
 * (`npx tsx bench/report.ts bench/results-deals.json` renders it).
 */
export async function runDealsOnly(options: Options) {
  const { deals } = await runPart({
    file: 'results-deals.json',
    mode: `${options.quick ? 'quick' : 'full'}, deals only`,
    endpoint: options.endpoint,
    floorCalls: options.quick ? 150 : 300,
    measure: async (floor) => ({
      deals: await runDealSuite({ ...options, floor, measure: measurer(floor, options.quick ? 40 : 100) }),
    }),
  });
  printSummary({ endpoints: [], scaling: [], scalingRatios: [], coldStart: { budgets: [] }, deals });
}

/**
 * `--events`: the floor and the events part only (bench/event-suite.ts), written to bench/results-events.json
 * (`npx tsx bench/report.ts bench/results-events.json` renders it).
 */
export async function runEventsOnly(options: Options) {
  const { events } = await runPart({
    file: 'results-events.json',
    mode: `${options.quick ? 'quick' : 'full'}, events only`,
    endpoint: options.endpoint,
    floorCalls: options.quick ? 150 : 300,
    measure: async (floor) => ({
      events: await runEventSuite({ ...options, measure: measurer(floor, options.quick ? 40 : 100) }),
    }),
  });
  printSummary({ endpoints: [], scaling: [], scalingRatios: [], coldStart: { budgets: [] }, events });
}

export async function runSuite(options: Options) {
  // 1. The floor: runPart measures it before parts 2 to 7 (measureSuite).
  const results = await runPart({
    file: 'results.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: options.quick ? 150 : 300,
    measure: (floor) => measureSuite(options, floor),
  });
  printSummary(results);
}

async function measureSuite(options: Options, floor: Floor) {
  const iterations = options.quick ? 40 : 100;
  const endpoint = measurer(floor, iterations);

  // 2. Endpoints ----------------------------------------------------------------------------------------------
  log('endpoints, in-process and warm');
  const account = benchAccount;
  const agents = [1, 2, 3].map((i) => ({ email: `agent${i}@bench.test`, name: `Agent ${i}` }));
  const weekdays = Object.fromEntries(
    ['mon', 'tue', 'wed', 'thu', 'fri'].map((d) => [d, [['09:00', '17:00']]]),
  );
  const plain = await account('bench-plain', {
    contacts: [{ email: 'known@client.test', first_name: 'Known' }],
  });
  const rr = await account('bench-rr', { agents, auto_assignment: { enabled: true, method: 'round_robin' } });
  const lb = await account('bench-lb', { agents, auto_assignment: { enabled: true, method: 'least_busy' } });
  const sla = await account('bench-sla', {
    business_hours: { time_zone: 'Europe/Paris', weekly: weekdays, holidays: ['2026-12-25'] },
    sla_policies: [{ name: 'All', resolution_minutes: 480, business_hours: true }],
  });
  const ticketBody = {
    subject: 'Invoice missing for March',
    description: 'Bench ticket',
    requester_email: 'someone@client.test',
    custom_fields: { plan: 'gold' },
  };
  const post = (acc: { accountId: string }) => () =>
    createTicket(
      proxyEvent({ method: 'POST', path: '/api/tickets', caller: callerOf(acc), body: ticketBody }),
      lambdaContext,
    );
  const endpoints: EndpointResult[] = [];
  endpoints.push(await endpoint('create ticket (no assignment)', post(plain)));
  endpoints.push(await endpoint('create ticket (round-robin)', post(rr)));
  endpoints.push(await endpoint('create ticket (least-busy)', post(lb)));
  endpoints.push(await endpoint('create ticket (SLA in business hours)', post(sla)));
  // The floor's transaction writes 3 items; a create's writes more. Measure one of the create's own size too.
  const createItems = Math.max(3, (endpoints[0]?.itemsWritten ?? 4) - 1);
  const sizedTransaction = await measureTransaction(options.endpoint, createItems, options.quick ? 100 : 200);
  log(`  floor TransactWriteItems (${createItems} items, as a create) p50 ${sizedTransaction.p50} ms`);

  // One ticket (GET by uuid, by reference, PATCH), on 20 tickets of the round-robin account. Budgets as above:
  // 1.3 × the floor of each round trip (GET by uuid 1, by reference 2, PATCH 2: read, then one transaction).
  const oneTicket = (method: string, ref: string, body?: Record<string, unknown>) => ({
    ...proxyEvent({ method, path: `/api/tickets/${encodeURIComponent(ref)}`, caller: callerOf(rr), body }),
    resource: '/api/tickets/{ticket}',
    pathParameters: { ticket: ref },
  });
  const pool: { uuid: string; reference: string }[] = [];
  for (let i = 0; i < 20; i++) pool.push(JSON.parse((await expectStatus(post(rr)(), 201)).body).ticket);
  const ticketAt = (n: number) =>
    pool[((n % pool.length) + pool.length) % pool.length] ?? { uuid: '', reference: '' };
  endpoints.push(
    await endpoint('get ticket (uuid)', (i) =>
      expectStatus(getTicket(oneTicket('GET', ticketAt(i).uuid), lambdaContext), 200),
    ),
  );
  endpoints.push(
    await endpoint('get ticket (reference)', (i) =>
      expectStatus(getTicket(oneTicket('GET', ticketAt(i).reference.toLowerCase()), lambdaContext), 200),
    ),
  );
  // Each PATCH sends status, priority, assignee, a custom field and the subject; every visit of a ticket changes
  // its status, priority, plan and subject (words re-indexed), so none is a no-op that writes nothing.
  let patches = 0;
  endpoints.push(
    await endpoint('update ticket', () => {
      const n = patches++;
      const visit = Math.floor(n / pool.length);
      const odd = visit % 2 === 1;
      return expectStatus(
        updateTicket(
          oneTicket('PATCH', ticketAt(n).uuid, {
            status: (['pending', 'in_progress', 'open'] as const)[visit % 3],
            priority: odd ? 'high' : 'low',
            assignee_id: rr.agents[odd ? 0 : 1]?.id,
            custom_fields: { plan: odd ? 'gold' : 'silver' },
            subject: odd ? 'Invoice missing for March' : 'Refund requested in April',
          }),
          lambdaContext,
        ),
        200,
      );
    }),
  );
  const deal = (body: (i: number) => Record<string, unknown>) => (i: number) =>
    createDeal(
      proxyEvent({ method: 'POST', path: '/api/deals', caller: callerOf(plain), body: body(i) }),
      lambdaContext,
    );
  endpoints.push(
    await endpoint(
      'create deal (existing contact)',
      deal(() => ({ name: 'Deal', amount: 100, contact_email: 'known@client.test' })),
    ),
  );
  endpoints.push(
    await endpoint(
      'create deal (new contact)',
      deal((i) => ({
        name: 'Deal',
        contact_email: `new${i}-${Date.now()}@client.test`,
        contact_first_name: 'New',
      })),
    ),
  );
  endpoints.push(
    await endpoint('list pipelines', () =>
      listPipelines(proxyEvent({ path: '/api/pipelines', caller: callerOf(plain) }), lambdaContext),
    ),
  );
  endpoints.push(
    await endpoint('authorizer (cache miss)', () => authorizer(tokenEvent(`Bearer ${plain.apiKey}`))),
  );

  // 3. Scaling ------------------------------------------------------------------------------------------------
  const scale = await account('bench-scale', {
    agents,
    auto_assignment: { enabled: true, method: 'round_robin' },
  });
  const config = await loadAccountConfig(scale.accountId);
  if (!config) throw new Error('scale account missing');
  const seeder = new TicketSeeder(scale.accountId, config);
  const agentId = scale.agents[0]?.id ?? 1;
  /**
   * List shapes. `page`: reads O(per_page) items at any size (its p50 must stay within 1.5× from 1k to the
   * largest size); `keys`: intersects the keys of its dimensions and words (O(those keys), no ticket off the
   * page), reported with its cost and exempt from the ratio.
   */
  const shapes: [string, Record<string, string>, 'page' | 'keys'][] = [
    ['list page 1 (no filter)', {}, 'page'],
    ['list page 1 status=open', { status: 'open' }, 'page'],
    ['list page 1 priority=high', { priority: 'high' }, 'page'],
    ['list page 1 assignee_id', { assignee_id: String(agentId) }, 'page'],
    ['list page 1 requester_email', { requester_email: SEED.email(7) }, 'page'],
    ['list page 1 custom_fields[plan]=gold', { 'custom_fields[plan]': 'gold' }, 'page'],
    ['list page 1 search word (5 matches)', { search: SEED.rareWord }, 'page'],
    ['list page 1 search reference', { search: 'tkt-000123' }, 'page'],
    ['list page 1 search e-mail (3 matches)', { search: 'founder@acme' }, 'page'],
    ['queue: agent open (status+assignee)', { status: 'open', assignee_id: String(agentId) }, 'page'],
    ['queue: urgent open (status+priority)', { status: 'open', priority: 'urgent' }, 'page'],
    // No queue since issue 40 (it cost every update moving priority and agent 4 WU): intersected from blocks.
    ['agent urgent (priority+assignee)', { priority: 'urgent', assignee_id: String(agentId) }, 'keys'],
    [
      'queue: agent urgent open (all three)',
      { status: 'open', priority: 'urgent', assignee_id: String(agentId) },
      'page',
    ],
    ['customer open (status+requester_email)', { status: 'open', requester_email: SEED.email(7) }, 'keys'],
    ['two filters (priority+plan)', { priority: 'high', 'custom_fields[plan]': 'gold' }, 'keys'],
    ['two custom fields (plan+tier)', { 'custom_fields[plan]': 'gold', 'custom_fields[tier]': 'a' }, 'keys'],
    ['search word + status', { search: SEED.rareWord, status: 'open' }, 'keys'],
    ['list page 100 (no filter)', { page: '100' }, 'page'],
  ];
  const sizes = options.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000];
  const scaling: { size: number; seedSeconds: number; results: EndpointResult[] }[] = [];
  for (const size of sizes) {
    const seedSeconds = round(await seeder.seedTo(size), 1);
    log(`scaling: ${size} tickets (seeded in ${seedSeconds} s)`);
    const results: EndpointResult[] = [];
    // Settle after seeding (and, at the first size, warm the JIT of both processes) before measuring.
    for (let i = 0; i < (size === sizes[0] ? 60 : 20); i++) {
      for (const [, query, kind] of shapes) {
        if (kind === 'keys' && size > 1_000 && i >= 3) continue;
        await listTickets(
          proxyEvent({ path: '/api/tickets', caller: callerOf(scale), query }),
          lambdaContext,
        );
      }
    }
    for (const [name, query, kind] of shapes) {
      const expensive = kind === 'keys' && size > 1_000;
      results.push(
        await endpoint(
          name,
          () =>
            listTickets(proxyEvent({ path: '/api/tickets', caller: callerOf(scale), query }), lambdaContext),
          expensive ? 10 : 2 * iterations,
        ),
      );
    }
    scaling.push({ size, seedSeconds, results });
  }
  const last = scaling[scaling.length - 1];
  const scalingRatios = shapes.map(([name, query, kind]) => {
    // A deep page is compared from the first size that has it (page 100 at 15 per page needs 1,500 tickets).
    const needs = (Number(query.page ?? 1) - 1) * 15 + 1;
    const first = scaling.find((s) => s.size >= needs);
    const a = first?.results.find((r) => r.name === name);
    const b = last?.results.find((r) => r.name === name);
    const comparable = first !== undefined && first !== last && a !== undefined && b !== undefined;
    const ratio = comparable ? round(b.p50 / a.p50) : Number.NaN;
    const exempt = kind === 'keys';
    return {
      name,
      from: first?.size,
      to: last?.size,
      ratio,
      withinBudget: exempt || !comparable || ratio <= 1.5,
      exempt,
    };
  });

  // 4 + 6. HTTP load and memory -------------------------------------------------------------------------------
  log('HTTP through the local gateway, 16 connections');
  const server = await startServer(ROOT, {
    DYNAMODB_ENDPOINT: options.endpoint,
    TABLE_NAME: process.env.TABLE_NAME ?? '',
  });
  const seconds = options.quick ? 5 : 10;
  const auth = (key: string) => ({ Authorization: `Bearer ${key}` });
  const httpCreate = await load(ROOT, 'create ticket', `${server.baseUrl}/api/tickets`, {
    method: 'POST',
    body: JSON.stringify(ticketBody),
    headers: { ...auth(plain.apiKey), 'Content-Type': 'application/json' },
    seconds,
    connections: 16,
  });
  const httpList = await load(ROOT, `list page 1 (${last?.size} tickets)`, `${server.baseUrl}/api/tickets`, {
    headers: auth(scale.apiKey ?? ''),
    seconds,
    connections: 16,
  });
  // A mixed workload on the largest account: creates, updates of four tickets (each PATCH renames its
  // ticket, so every one re-indexes words) and an agent's queue polled, all at once.
  log(`mixed workload over HTTP on ${last?.size} tickets: creates, updates and queue polls at once`);
  const queueQuery = `status=open&assignee_id=${agentId}`;
  const queuePage = JSON.parse(
    (
      await listTickets(
        proxyEvent({
          path: '/api/tickets',
          caller: callerOf(scale),
          query: { status: 'open', assignee_id: String(agentId) },
        }),
        lambdaContext,
      )
    ).body,
  ) as { data: { uuid: string }[] };
  const updated = queuePage.data.slice(0, 4).map((t) => t.uuid);
  const [mixedCreate, mixedPoll, mixedUpdate] = await Promise.all([
    load(ROOT, 'mixed: create', `${server.baseUrl}/api/tickets`, {
      method: 'POST',
      body: JSON.stringify(ticketBody),
      headers: { ...auth(scale.apiKey), 'Content-Type': 'application/json' },
      seconds,
      connections: 4,
    }),
    load(ROOT, 'mixed: agent queue poll', `${server.baseUrl}/api/tickets?${queueQuery}`, {
      headers: auth(scale.apiKey),
      seconds,
      connections: 8,
    }),
    // Each connection renames its own ticket every time (new words to index) and flips its priority.
    loopLoad(
      `mixed: update (${updated.length} tickets, one connection each)`,
      { seconds, connections: updated.length },
      (c, i) =>
        fetch(`${server.baseUrl}/api/tickets/${updated[c]}`, {
          method: 'PATCH',
          headers: { ...auth(scale.apiKey), 'Content-Type': 'application/json' },
          body: JSON.stringify({ subject: `Mixed workload ${c} run ${i}`, priority: i % 2 ? 'high' : 'low' }),
        }),
    ),
  ]);
  const mixed = [mixedCreate, mixedPoll, mixedUpdate];
  for (const h of mixed)
    log(
      `  ${h.name.padEnd(44)} ${h.requestsPerSecond} req/s  p50 ${h.p50Ms} ms  p99 ${h.p99Ms} ms  non-2xx ${h.non2xx}`,
    );
  const peakRssMb = round(server.peakRssMb(), 1);
  await server.stop();
  const inProcess = {
    create: endpoints[0]?.p50 ?? Number.NaN,
    list: last?.results[0]?.p50 ?? Number.NaN,
  };
  const http = [
    { ...httpCreate, inProcessP50Ms: inProcess.create, p50Ratio: round(httpCreate.p50Ms / inProcess.create) },
    { ...httpList, inProcessP50Ms: inProcess.list, p50Ratio: round(httpList.p50Ms / inProcess.list) },
  ];
  for (const h of http)
    log(
      `  ${h.name.padEnd(30)} ${h.requestsPerSecond} req/s  p50 ${h.p50Ms} ms  p99 ${h.p99Ms} ms  non-2xx ${h.non2xx}${
        h.non2xx > 0 ? ` (statuses ${JSON.stringify(h.statuses)})` : ''
      }`,
    );
  log(`  peak RSS of the gateway process: ${peakRssMb} MB`);

  // 5. Deals ---------------------------------------------------------------------------------------------------
  const deals = await runDealSuite({ ...options, floor, measure: endpoint });

  // 6. Events ------------------------------------------------------------------------------------------------
  const events = await runEventSuite({ ...options, measure: endpoint });

  // 7. Cold start ---------------------------------------------------------------------------------------------
  log('cold start: bundle size and module load in a fresh Node process');
  const cold = await measureColdStarts(ROOT, options.quick ? 7 : 15);
  for (const f of [cold.baseline, ...cold.functions]) {
    log(
      `  ${f.name.padEnd(34)} ${String(Math.round(f.bytes / 1024)).padStart(5)} KB  load ${f.loadMs} ms  ×${f.loadRatio}`,
    );
  }

  return {
    sizedTransactionFloor: { items: createItems, ...sizedTransaction },
    endpoints,
    scaling,
    scalingRatios,
    http,
    mixed,
    peakRssMb,
    deals,
    events,
    coldStart: {
      ...cold,
      budgets: cold.functions.map((f) => ({
        name: f.name,
        sizeOk: f.bytes <= 400 * 1024,
        loadOk: f.loadRatio <= 1.15,
      })),
    },
  };
}

function printSummary(r: {
  deals?: DealResults;
  events?: EventResults;
  endpoints: EndpointResult[];
  scaling: { size: number; results: EndpointResult[] }[];
  scalingRatios: { name: string; ratio: number; withinBudget: boolean; exempt: boolean }[];
  coldStart: { budgets: { name: string; sizeOk: boolean; loadOk: boolean }[] };
}) {
  log('\nbudgets');
  const missed = [
    ...r.scaling.flatMap((s) =>
      s.results
        .filter((e) => !e.withinBudget)
        .map((e) => `latency at ${s.size}: ${e.name} p50 ${e.p50} ms > ${e.budgetMs} ms`),
    ),
    ...r.endpoints
      .filter((e) => !e.withinBudget)
      .map((e) => `latency: ${e.name} p50 ${e.p50} ms > ${e.budgetMs} ms`),
    ...r.scalingRatios.filter((s) => !s.withinBudget).map((s) => `scaling: ${s.name} ×${s.ratio} > 1.5`),
    ...(r.deals?.scalingRatios ?? [])
      .filter((s) => !s.withinBudget)
      .map((s) => `deal scaling: ${s.name} ×${s.ratio} > 1.5`),
    ...(r.events?.feed.ratios ?? [])
      .filter((s) => !s.withinBudget)
      .map((s) => `events scaling: ${s.name} ×${s.ratio} > 1.5`),
    ...r.coldStart.budgets.filter((b) => !b.sizeOk).map((b) => `bundle size: ${b.name} > 400 KB`),
    ...r.coldStart.budgets.filter((b) => !b.loadOk).map((b) => `load time: ${b.name} > 1.15 × baseline`),
  ];
  for (const s of r.scalingRatios)
    log(
      `  scaling ${s.name.padEnd(44)} ${Number.isNaN(s.ratio) ? 'n/a (one size)' : `×${s.ratio}`}${s.exempt ? ' (exempt: cost model)' : ''}`,
    );
  for (const s of [...(r.deals?.scalingRatios ?? []), ...(r.events?.feed.ratios ?? [])])
    log(`  scaling ${s.name.padEnd(44)} ${Number.isNaN(s.ratio) ? 'n/a (one size)' : `×${s.ratio}`}`);
  log(missed.length === 0 ? '  every budget met' : `  missed:\n    ${missed.join('\n    ')}`);
}
