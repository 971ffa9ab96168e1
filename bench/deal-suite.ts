import { handler as updateContact } from '#functions/contacts-update.ts';
import { handler as getDeal } from '#functions/deals-get.ts';
import { handler as listDeals } from '#functions/deals-list.ts';
import { handler as updateDeal } from '#functions/deals-update.ts';
import { handler as pipelineBoard } from '#functions/pipelines-board.ts';
import { ROOT } from '#infra/local/environment.ts';
import { loadAccountConfig } from '#lib/data/accounts/accounts.ts';
import { callerOf, lambdaContext, proxyEvent, routeEvent } from '#test/support/events.ts';
import { benchAccount } from './lib/account.ts';
import { DEAL_SEED, DealSeeder } from './lib/deal-seed.ts';
import { type Floor, measureTransaction } from './lib/floor.ts';
import { type HttpLoad, load, loopLoad, startServer } from './lib/http-load.ts';
import { type EndpointResult, expectStatus, floorMsOf, log, type Measure } from './lib/measure.ts';
import { round, type Timing } from './lib/stats.ts';

/**
 * Deals (issue 19): list page shapes and the pipeline board at 1k, 10k and 100k deals (--quick: 1k and 10k) in
 * one account of the bench's table, in-process; a deal GET, a deal PATCH (stage move and amount) and a contact
 * PATCH (rename) against their floor (the read's floor plus one TransactWriteItems of the same item count); and
 * a mixed workload over HTTP (creates, stage moves, board polls at once) on the largest account.
 */
export interface DealResults {
  contacts: number;
  /** List shapes and the board, per size: each must stay within 1.5× (p50) from the first size to the last. */
  scaling: { size: number; seedSeconds: number; results: EndpointResult[] }[];
  /** One deal's GET and PATCH and a contact's PATCH, per size, each with its floor. */
  writes: { size: number; results: (EndpointResult & { floorMs: number; p50OverFloor: number })[] }[];
  /** The write's own floor: one TransactWriteItems of the items the request writes (its rate count aside). */
  transactionFloors: ({ name: string; items: number } & Timing)[];
  scalingRatios: { name: string; from: number; to: number; ratio: number; withinBudget: boolean }[];
  mixed: HttpLoad[];
}

/** The bench's two pipelines (the events part uses them too). */
export const DEAL_STAGES = {
  sales: [
    { name: 'Lead', color: '#1f77b4', probability: 10 },
    { name: 'Qualified', color: '#ff7f0e', probability: 30 },
    { name: 'Proposal', color: '#2ca02c', probability: 60 },
    { name: 'Negotiation', color: '#d62728', probability: 80 },
  ],
  renewals: [
    { name: 'Due', color: '#9467bd', probability: 50 },
    { name: 'Quoted', color: '#8c564b', probability: 70 },
    { name: 'Signed', color: '#e377c2', probability: 90 },
  ],
};

export async function runDealSuite(options: {
  quick: boolean;
  endpoint: string;
  floor: Floor;
  measure: Measure;
}): Promise<DealResults> {
  const { measure, floor } = options;
  const iterations = options.quick ? 40 : 100;
  const acc = await benchAccount('bench-deals', {
    pipelines: [
      { name: 'Sales', default: true, stages: DEAL_STAGES.sales },
      { name: 'Renewals', stages: DEAL_STAGES.renewals },
    ],
  });
  const config = await loadAccountConfig(acc.accountId);
  if (!config) throw new Error('deal account missing');
  const seeder = new DealSeeder(acc.accountId, config);
  const caller = callerOf(acc);
  const [lead, qualified] = seeder.stages;
  if (!lead || !qualified) throw new Error('the deal account has no stages');
  const sales = lead.pipeline;
  const key = seeder.contact(DEAL_SEED.keyContact.id);

  const list = (query: Record<string, string>) =>
    listDeals(proxyEvent({ path: '/api/deals', caller, query }), lambdaContext);
  const board = () =>
    pipelineBoard(
      routeEvent('GET', '/api/pipelines/{pipeline}/board', { pipeline: String(sales.id) }, caller),
      lambdaContext,
    );
  const shapes: [string, () => Promise<{ statusCode: number; body: string }>][] = [
    ['deals page 1 stage_id', () => list({ stage_id: String(qualified.stage.id) })],
    ['deals page 1 status=open', () => list({ status: 'open' })],
    [
      'deals page 1 stage_id+status=open',
      () => list({ stage_id: String(qualified.stage.id), status: 'open' }),
    ],
    ['deals page 1 contact_email (key account)', () => list({ contact_email: key.email })],
    ['deals page 1 search word (5 matches)', () => list({ search: DEAL_SEED.rareWord })],
    ["deals page 1 search a contact's name", () => list({ search: DEAL_SEED.keyContact.lastName })],
    ['pipeline board', board],
  ];

  const dealEvent = (method: string, uuid: string, body?: Record<string, unknown>) =>
    routeEvent(method, '/api/deals/{deal}', { deal: uuid }, caller, body);
  const contactEvent = (uuid: string, body: Record<string, unknown>) =>
    routeEvent('PATCH', '/api/contacts/{contact}', { contact: uuid }, caller, body);
  // Stage moves: open deals of Lead go to Qualified and back, each visit with a new amount.
  const openLeads = async () =>
    (
      JSON.parse(
        (await expectStatus(list({ stage_id: String(lead.stage.id), status: 'open' }), 200)).body,
      ) as {
        data: { uuid: string }[];
      }
    ).data.map((d) => d.uuid);
  const stageMove = (n: number, visit: number) => ({
    stage_id: visit % 2 === 0 ? qualified.stage.id : lead.stage.id,
    amount: round(1_000 + (n % 997) + 0.25),
  });

  const sizes = options.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000];
  const results: DealResults = {
    contacts: DEAL_SEED.contacts,
    scaling: [],
    writes: [],
    transactionFloors: [],
    scalingRatios: [],
    mixed: [],
  };
  let patches = 0;
  let renames = 0;
  for (const size of sizes) {
    const seedSeconds = round(await seeder.seedTo(size), 1);
    log(`deals: ${size} deals, ${DEAL_SEED.contacts} contacts (seeded in ${seedSeconds} s)`);
    for (let i = 0; i < (size === sizes[0] ? 40 : 10); i++) for (const [, run] of shapes) await run();
    const shapeResults: EndpointResult[] = [];
    for (const [name, run] of shapes) {
      shapeResults.push(await measure(name, () => expectStatus(run(), 200), 2 * iterations));
    }
    results.scaling.push({ size, seedSeconds, results: shapeResults });

    const pool = (await openLeads()).slice(0, 10);
    const at = (n: number) => pool[((n % pool.length) + pool.length) % pool.length] as string;
    const read = await measure('get deal', (i) =>
      expectStatus(getDeal(dealEvent('GET', at(i)), lambdaContext), 200),
    );
    const move = await measure('update deal (stage move + amount)', () => {
      const n = patches++;
      const body = stageMove(n, Math.floor(n / pool.length));
      return expectStatus(updateDeal(dealEvent('PATCH', at(n), body), lambdaContext), 200);
    });
    const rename = await measure('update contact (rename)', () => {
      const n = renames++;
      const contact = seeder.contact(2 + (n % 10));
      const visit = Math.floor(n / 10);
      return expectStatus(
        updateContact(
          contactEvent(contact.uuid, { last_name: visit % 2 === 0 ? 'Marlowe' : 'Whitby' }),
          lambdaContext,
        ),
        200,
      );
    });
    // The floor of a write: its read's round trip, then one TransactWriteItems of as many items (less the
    // request's rate count, an UpdateItem beside the read), measured once at the first size.
    if (results.transactionFloors.length === 0) {
      for (const w of [move, rename]) {
        const items = Math.max(1, w.itemsWritten - 1);
        const t = await measureTransaction(options.endpoint, items, options.quick ? 100 : 200);
        results.transactionFloors.push({ name: w.name, items, ...t });
        log(`  floor TransactWriteItems (${items} items, as ${w.name}) p50 ${t.p50} ms`);
      }
    }
    results.writes.push({
      size,
      results: [read, move, rename].map((r) => {
        const transaction = results.transactionFloors.find((t) => t.name === r.name);
        const floorMs = floorMsOf(floor, r.operations, transaction?.p50);
        return { ...r, floorMs, p50OverFloor: round(r.p50 / floorMs) };
      }),
    });
  }

  const first = results.scaling[0];
  const last = results.scaling[results.scaling.length - 1];
  results.scalingRatios = shapes.map(([name]) => {
    const a = first?.results.find((r) => r.name === name);
    const b = last?.results.find((r) => r.name === name);
    const ratio = a && b && first !== last ? round(b.p50 / a.p50) : Number.NaN;
    return {
      name,
      from: first?.size ?? 0,
      to: last?.size ?? 0,
      ratio,
      withinBudget: Number.isNaN(ratio) || ratio <= 1.5,
    };
  });

  log(`deals: mixed workload over HTTP on ${last?.size} deals: creates, stage moves and board polls at once`);
  const server = await startServer(ROOT, {
    DYNAMODB_ENDPOINT: options.endpoint,
    TABLE_NAME: process.env.TABLE_NAME ?? '',
  });
  try {
    const seconds = options.quick ? 5 : 10;
    const headers = { Authorization: `Bearer ${acc.apiKey}` };
    const moved = (await openLeads()).slice(0, 4);
    results.mixed = await Promise.all([
      load(ROOT, 'deals mixed: create (existing contact)', `${server.baseUrl}/api/deals`, {
        method: 'POST',
        body: JSON.stringify({
          name: 'Mixed workload deal',
          amount: 1250.5,
          currency: 'EUR',
          contact_email: seeder.contact(3).email,
        }),
        headers: { ...headers, 'Content-Type': 'application/json' },
        seconds,
        connections: 4,
      }),
      load(ROOT, 'deals mixed: board poll', `${server.baseUrl}/api/pipelines/${sales.id}/board`, {
        headers,
        seconds,
        connections: 8,
      }),
      // Each connection moves its own deal between two stages, with a new amount every time.
      loopLoad(
        `deals mixed: stage move (${moved.length} deals, one connection each)`,
        { seconds, connections: moved.length },
        (c, i) =>
          fetch(`${server.baseUrl}/api/deals/${moved[c]}`, {
            method: 'PATCH',
            headers: { ...headers, 'Content-Type': 'application/json' },
            body: JSON.stringify(stageMove(i, i)),
          }),
      ),
    ]);
  } finally {
    await server.stop();
  }
  for (const h of results.mixed)
    log(
      `  ${h.name.padEnd(44)} ${h.requestsPerSecond} req/s  p50 ${h.p50Ms} ms  p99 ${h.p99Ms} ms  non-2xx ${h.non2xx}`,
    );
  return results;
}
