import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { handler as updateContact } from '#functions/contacts-update.ts';
import { handler as createDeal } from '#functions/deals-create.ts';
import { handler as updateDeal } from '#functions/deals-update.ts';
import { handler as listEvents } from '#functions/events-list.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { ROOT } from '#infra/local/environment.ts';
import { type EventDraft, type EventRecord, eventItems } from '#lib/data/events.ts';
import { EVENT_SHARDS, eventKeys } from '#lib/data/keys.ts';
import { dynamo, tableName } from '#lib/data/store/client.ts';
import { cancellationCodes } from '#lib/data/store/errors.ts';
import { nowMicros } from '#lib/time.ts';
import { itemBytes } from '#test/support/dynamo-figures.ts';
import { callerOf, lambdaContext, proxyEvent, routeEvent, ticketEvent } from '#test/support/events.ts';
import { DEAL_STAGES } from './deal-suite.ts';
import { benchAccount } from './lib/account.ts';
import { countItems } from './lib/count-items.ts';
import { EventSeeder, eventTemplates } from './lib/event-seed.ts';
import { type EndpointResult, expectStatus, log, type Measure } from './lib/measure.ts';
import { percentile, round } from './lib/stats.ts';

/**
 * Events (decisions.md, "Events"): what writing an event in every change's commit costs, and what reading the
 * feed costs as it grows.
 *
 * 1. Writes with events on: ticket create and update, deal create and update, contact update, measured as the
 *    bench always measures them (in-process, warm, DynamoDB figures per call), printed beside the figures of the
 *    same rows in the committed runs from before events (bench/results.json, bench/results-deals.json: read, not
 *    measured again).
 * 2. The feed: GET /api/events, limit 100, after a cursor in the middle, without and with a type filter, at 1k,
 *    10k and 100k events in one account (--quick: 1k and 10k). The events are written in bulk with
 *    BatchWriteItem, each one the items lib/data/events.ts's `eventItems` gives (the layout a commit writes),
 *    their bodies those of real events of part 1, and the account's `event` sequence set to match.
 * 3. The hot items of one account: N = 1, 4, 16 writers PATCHing distinct tickets of one account for a few seconds
 *    on DynamoDB Local; events committed a second, conflicts and 503s.
 */

export interface PreviousFigures {
  /** Which file and run the figures come from. */
  source: string;
  startedAt: string;
  /** Whether that run had events (a run from before them has no `events` part). */
  hadEvents: boolean;
  p50: number;
  p99: number;
  roundTrips: number;
  operations: string[][];
  itemsWritten: number;
  /** What DynamoDB Local reported (it under-reports transactions: test/support/dynamo-figures.ts). */
  capacity: number;
  /** p50 / the floor-sum of its round trips, in that run (its budget / 1.3): a latency on that run's store. */
  p50OverFloor: number;
}

export interface EventWriteRow extends EndpointResult {
  /** p50 / the floor-sum of its round trips (its budget / 1.3), on this run's store. */
  p50OverFloor: number;
  previous?: PreviousFigures | undefined;
}

export interface FeedShapeRatio {
  name: string;
  from: number;
  to: number;
  ratio: number;
  withinBudget: boolean;
}

export interface HotRun {
  kind: string;
  writers: number;
  seconds: number;
  /** PATCH answers by status. */
  answers: Record<string, number>;
  /** Event items written in the run (counted in the feed partition). */
  eventsCommitted: number;
  /** Places taken in the account's sequence (one per event committed, one per commit that lost and retried). */
  placesTaken: number;
  eventsPerSecond: number;
  /** Transactions cancelled by a conflict with another (each decided again by the data layer). */
  conflicts: number;
  /** Every failed DynamoDB call, by operation and reason. */
  failures: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
}

export interface EventResults {
  /** The machine's load average (1, 5, 15 minutes) when the part started and when it ended. */
  loadAverage: { start: number[]; end: number[] };
  writes: EventWriteRow[];
  feed: {
    /** The seeded events: type mix, and the size of each type's item (its JSON body and the item). */
    mix: string[];
    eventSizes: { type: string; bodyBytes: number; itemBytes: number; transactionWriteUnits: number }[];
    scaling: { size: number; seedSeconds: number; results: EndpointResult[] }[];
    ratios: FeedShapeRatio[];
  };
  hot: { note: string; runs: HotRun[] };
}

/** One period of the seeded feed's types (a third are deal events: the type filter's shape serves 30 of 100). */
const MIX = [
  'ticket.updated',
  'ticket.updated',
  'ticket.updated',
  'ticket.updated',
  'ticket.created',
  'ticket.created',
  'deal.updated',
  'deal.updated',
  'deal.created',
  'contact.updated',
];
const TYPE_FILTER = 'deal.*';

export const HOT_NOTE =
  'These are DynamoDB Local figures on this machine (one Java process serving every write, beside the Node process ' +
  "of the writers): they show this store's limit, not DynamoDB's. On DynamoDB the limit of one account is per " +
  "item and partition: every event takes its place from its object's shard counter by an UpdateItem (1 WCU; 16 " +
  'counters, each ~1/16 of the events: `npm run bench -- --event-places` measures the hottest), and puts its item ' +
  "in that shard's partition (16 partitions of 1,000 WCU/s each; a put in a transaction costs 2 WCU per KB: 8 " +
  'WCU for a 4 KB event). ' +
  'docs/capacity.md, "Events feed".';

export async function runEventSuite(options: { quick: boolean; measure: Measure }): Promise<EventResults> {
  const { measure } = options;
  const iterations = options.quick ? 40 : 100;
  const loadAtStart = loadavg().map((n) => round(n));
  countFailures();
  const previous = previousFigures();

  // 1. Writes ---------------------------------------------------------------------------------------------------
  log('events: writes with events on, beside the committed run from before events');
  const agents = [1, 2, 3].map((i) => ({ email: `agent${i}@bench.test`, name: `Agent ${i}` }));
  const plain = await benchAccount('bench-events-plain', {
    contacts: [{ email: 'known@client.test', first_name: 'Known' }],
  });
  const rr = await benchAccount('bench-events-rr', {
    agents,
    auto_assignment: { enabled: true, method: 'round_robin' },
  });
  const dealsAccount = await benchAccount('bench-events-deals', {
    pipelines: [
      { name: 'Sales', default: true, stages: DEAL_STAGES.sales },
      { name: 'Renewals', stages: DEAL_STAGES.renewals },
    ],
  });
  // The same requests as bench/suite.ts and bench/deal-suite.ts measure, so the rows compare.
  const ticketBody = {
    subject: 'Invoice missing for March',
    description: 'Bench ticket',
    requester_email: 'someone@client.test',
    custom_fields: { plan: 'gold' },
  };
  const post = (acc: { accountId: string }) =>
    createTicket(
      proxyEvent({ method: 'POST', path: '/api/tickets', caller: callerOf(acc), body: ticketBody }),
      lambdaContext,
    );
  const writes: EventWriteRow[] = [];
  const row = (result: EndpointResult, from: string) => {
    const before = previous.get(from);
    writes.push({ ...result, p50OverFloor: overFloor(result), previous: before });
  };

  row(await measure('create ticket (no assignment)', () => expectStatus(post(plain), 201)), 'create ticket');
  const pool: string[] = [];
  for (let i = 0; i < 20; i++) pool.push(JSON.parse((await expectStatus(post(rr), 201)).body).ticket.uuid);
  const at = <T>(list: T[], n: number) => list[((n % list.length) + list.length) % list.length] as T;
  let patches = 0;
  row(
    await measure('update ticket', () => {
      // As bench/suite.ts: every visit changes status, priority, assignee, plan and subject.
      const n = patches++;
      const visit = Math.floor(n / pool.length);
      const odd = visit % 2 === 1;
      return expectStatus(
        updateTicket(
          ticketEvent('PATCH', at(pool, n), callerOf(rr), {
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
    'update ticket',
  );
  const dealPost = (acc: { accountId: string }, body: Record<string, unknown>) =>
    createDeal(
      proxyEvent({ method: 'POST', path: '/api/deals', caller: callerOf(acc), body }),
      lambdaContext,
    );
  row(
    await measure('create deal (existing contact)', () =>
      expectStatus(dealPost(plain, { name: 'Deal', amount: 100, contact_email: 'known@client.test' }), 201),
    ),
    'create deal',
  );

  // Ten open deals in the first stage, each with a contact of its own (as the deal suite's pool of open leads).
  const sales = dealsAccount.pipelines.find((p) => p.is_default);
  const [lead, qualified] = sales?.stages ?? [];
  if (!lead || !qualified) throw new Error('the deal account has no stages');
  const deals: { uuid: string; contact: string }[] = [];
  for (let i = 0; i < 10; i++) {
    const created = await expectStatus(
      dealPost(dealsAccount, {
        name: `Events deal ${i}`,
        amount: 500,
        contact_email: `events-contact${i}@client.test`,
        contact_first_name: 'Events',
        contact_last_name: `Contact ${i}`,
      }),
      201,
    );
    const data = JSON.parse(created.body).data;
    deals.push({ uuid: data.uuid, contact: data.contact.uuid });
  }
  const dealCaller = callerOf(dealsAccount);
  let moves = 0;
  row(
    await measure('update deal (stage move + amount)', () => {
      // As bench/deal-suite.ts: Lead to Qualified and back, a new amount every time.
      const n = moves++;
      const visit = Math.floor(n / deals.length);
      const uuid = at(deals, n).uuid;
      const body = {
        stage_id: visit % 2 === 0 ? qualified.id : lead.id,
        amount: round(1_000 + (n % 997) + 0.25),
      };
      return expectStatus(
        updateDeal(routeEvent('PATCH', '/api/deals/{deal}', { deal: uuid }, dealCaller, body), lambdaContext),
        200,
      );
    }),
    'update deal (stage move + amount)',
  );
  let renames = 0;
  row(
    await measure('update contact (rename)', () => {
      const n = renames++;
      const uuid = at(deals, n).contact;
      const body = { last_name: Math.floor(n / deals.length) % 2 === 0 ? 'Marlowe' : 'Whitby' };
      return expectStatus(
        updateContact(
          routeEvent('PATCH', '/api/contacts/{contact}', { contact: uuid }, dealCaller, body),
          lambdaContext,
        ),
        200,
      );
    }),
    'update contact (rename)',
  );
  printWrites(writes);

  // 2. The feed -------------------------------------------------------------------------------------------------
  const templates = await eventTemplates([rr.accountId, dealsAccount.accountId], MIX);
  const eventSizes = MIX.filter((t, i) => MIX.indexOf(t) === i).map((type) => {
    const { items } = eventItems('sizing', 1, templates.get(type) as EventDraft, nowMicros());
    const head = items[0] as Record<string, unknown>;
    const bytes = itemBytes(head);
    return {
      type,
      bodyBytes: (head.body as Buffer).length,
      itemBytes: bytes,
      transactionWriteUnits: 2 * Math.ceil(bytes / 1024),
    };
  });
  for (const s of eventSizes)
    log(
      `  event ${s.type.padEnd(16)} body ${s.bodyBytes} B, item ≈${s.itemBytes} B: ${s.transactionWriteUnits} WCU as a put in a transaction`,
    );
  const sizes = options.quick ? [1_000, 10_000] : [1_000, 10_000, 100_000];
  const feedAccount = await benchAccount('bench-events-feed');
  const feedCaller = callerOf(feedAccount);
  const seeder = new EventSeeder(feedAccount.accountId, templates, MIX, sizes.map(middleOf));
  const page = (query: Record<string, string | string[]>) =>
    expectStatus(
      listEvents(proxyEvent({ path: '/api/events', caller: feedCaller, query }), lambdaContext),
      200,
    );
  const scaling: EventResults['feed']['scaling'] = [];
  const shapeNames = [
    'feed page (limit 100, after the middle)',
    `feed page type=${TYPE_FILTER} (limit 100, after the middle)`,
  ];
  for (const size of sizes) {
    const seedSeconds = round(await seeder.seedTo(size), 1);
    log(`events: feed of ${size.toLocaleString('en')} events in one account (seeded in ${seedSeconds} s)`);
    const after = seeder.idAt(middleOf(size));
    const shapes: [string, Record<string, string | string[]>, number][] = [
      [shapeNames[0] as string, { after, limit: '100' }, 100],
      [shapeNames[1] as string, { after, limit: '100', type: [TYPE_FILTER] }, 30],
    ];
    // Each page must be what it says: 100 events after the cursor, and the deal events among them.
    for (const [name, query, served] of shapes) {
      const body = JSON.parse((await page(query)).body) as { data: EventRecord[]; next_cursor: string };
      if (body.data.length !== served)
        throw new Error(`${name}: ${body.data.length} events, expected ${served}`);
    }
    // Settle after the bulk write (the store's garbage collector), then warm: the first size warms the JIT of both
    // processes too (after 40 rounds its p50 came out 2× the larger sizes'; after 20 rounds, the first shape
    // measured after seeding 100k came out 1.6× the second, for the same 101 items).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    for (let i = 0; i < (size === sizes[0] ? 150 : 60); i++)
      for (const [, query] of shapes) await page(query);
    const results: EndpointResult[] = [];
    for (const [name, query] of shapes) results.push(await measure(name, () => page(query), 2 * iterations));
    scaling.push({ size, seedSeconds, results });
  }
  const first = scaling[0];
  const last = scaling[scaling.length - 1];
  const ratios = shapeNames.map((name) => {
    const a = first?.results.find((r) => r.name === name);
    const b = last?.results.find((r) => r.name === name);
    const ratio = a && b && first !== last ? round(b.p50 / a.p50) : Number.NaN;
    return { name, from: first?.size ?? 0, to: last?.size ?? 0, ratio, withinBudget: !(ratio > 1.5) };
  });
  for (const r of ratios)
    log(
      `  ${r.name.padEnd(60)} ${r.to} / ${r.from}: ×${r.ratio} ${r.withinBudget ? 'ok' : 'MISSED (> 1.5)'}`,
    );

  // 3. The hot items of one account ----------------------------------------------------------------------------
  const hot = await hotItems(options.quick ? 3 : 5);
  return {
    loadAverage: { start: loadAtStart, end: loadavg().map((n) => round(n)) },
    writes,
    feed: { mix: MIX, eventSizes, scaling, ratios },
    hot,
  };
}

const middleOf = (size: number) => Math.floor(size / 2);
const overFloor = (e: { p50: number; budgetMs: number }) => round(e.p50 / (e.budgetMs / 1.3));

/**
 * The figures of the same rows in the committed runs (read from their JSON; the events part measures only the
 * code as it is now): the ticket rows and the deal create from bench/results.json's endpoints, the deal and
 * contact PATCH from bench/results-deals.json at 1,000 deals (their cost is the same at every size).
 */
function previousFigures(): Map<string, PreviousFigures> {
  const found = new Map<string, PreviousFigures>();
  const read = (file: string) => {
    const path = join(ROOT, 'bench', file);
    return existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : undefined;
  };
  const figures = (
    source: string,
    run: Record<string, unknown>,
    e: PreviousFigures & { name: string; budgetMs: number },
  ): PreviousFigures => ({
    source,
    startedAt: String(run.startedAt),
    hadEvents: run.events !== undefined,
    p50: e.p50,
    p99: e.p99,
    roundTrips: e.roundTrips,
    operations: e.operations,
    itemsWritten: e.itemsWritten,
    capacity: e.capacity,
    p50OverFloor: overFloor(e),
  });
  const all = read('results.json');
  for (const [row, name] of [
    ['create ticket', 'create ticket (no assignment)'],
    ['update ticket', 'update ticket'],
    ['create deal', 'create deal (existing contact)'],
  ] as const) {
    const e = all?.endpoints?.find((x: { name: string }) => x.name === name);
    if (e) found.set(row, figures('bench/results.json', all, e));
  }
  const deals = read('results-deals.json');
  const writes = deals?.deals?.writes?.find((w: { size: number }) => w.size === 1_000);
  for (const name of ['update deal (stage move + amount)', 'update contact (rename)']) {
    const e = writes?.results.find((x: { name: string }) => x.name === name);
    if (e) found.set(name, figures('bench/results-deals.json (1,000 deals)', deals, e));
  }
  return found;
}

function printWrites(rows: EventWriteRow[]) {
  log('\n  with events (now) | the committed run from before events (previous)');
  log(
    `  ${'request'.padEnd(36)} ${'p50 ms'.padStart(15)} ${'p50 / floor'.padStart(12)} ${'round trips'.padStart(12)} ${'items written'.padStart(14)} ${'write units'.padStart(12)}`,
  );
  for (const r of rows) {
    const p = r.previous;
    const pair = (now: number, before: number | undefined) => `${now} | ${before ?? '—'}`;
    log(
      `  ${r.name.padEnd(36)} ${pair(r.p50, p?.p50).padStart(15)} ${pair(r.p50OverFloor, p?.p50OverFloor).padStart(12)} ${pair(r.roundTrips, p?.roundTrips).padStart(12)} ${pair(r.itemsWritten, p?.itemsWritten).padStart(14)} ${`${r.writeUnits} | —`.padStart(12)}`,
    );
  }
  const sources = [
    ...new Set(
      rows.flatMap((r) =>
        r.previous
          ? [
              `${r.previous.source} of ${r.previous.startedAt}${r.previous.hadEvents ? ' (that run had events)' : ''}`,
            ]
          : [],
      ),
    ),
  ];
  log(`  previous: ${sources.join('; ') || 'none found'}\n`);
}

// Failed DynamoDB calls, by operation and reason (a cancelled transaction by its actions' reasons), as the data
// layer sees them after the SDK's own retries.
const failures = new Map<string, number>();
let counting = false;
function countFailures() {
  if (counting) return;
  counting = true;
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        const codes = [...new Set(cancellationCodes(error).filter((c) => c !== 'None'))];
        const reason = codes.length > 0 ? codes.join('+') : ((error as Error).name ?? 'Error');
        const key = `${String(context.commandName).replace(/Command$/, '')}: ${reason}`;
        failures.set(key, (failures.get(key) ?? 0) + 1);
        throw error;
      }
    },
    { step: 'initialize', name: 'benchFailures', priority: 'low' },
  );
}

/**
 * N writers, each PATCHing a ticket of its own of one account in a loop for `seconds`: `description` (the
 * ticket's item and the event: the account's only shared items are the events' own, its sequences item and its
 * feed partition) and `priority` (also the account's ticket stats item, which every priority change moves).
 */
async function hotItems(seconds: number): Promise<EventResults['hot']> {
  log(`events: the hot items of one account, N writers PATCHing distinct tickets for ${seconds} s each`);
  log(`  ${HOT_NOTE}`);
  const account = await benchAccount('bench-events-hot');
  const caller = callerOf(account);
  const tickets: { uuid: string; priority: string }[] = [];
  for (let i = 0; i < 16; i++) {
    const created = await expectStatus(
      createTicket(
        proxyEvent({
          method: 'POST',
          path: '/api/tickets',
          caller,
          body: { subject: `Hot ticket ${i}`, description: 'Hot', requester_email: `hot${i}@client.test` },
        }),
        lambdaContext,
      ),
      201,
    );
    const t = JSON.parse(created.body).ticket;
    tickets.push({ uuid: t.uuid, priority: t.priority });
  }
  const runs: HotRun[] = [];
  for (const kind of ['description', 'priority']) {
    for (const writers of [1, 4, 16]) {
      const placesBefore = await eventSequence(account.accountId);
      const eventsBefore = await countEvents(account.accountId, 0, ALL_PLACES);
      failures.clear();
      const answers: Record<string, number> = {};
      const latencies: number[] = [];
      const started = performance.now();
      const end = started + seconds * 1000;
      await Promise.all(
        tickets.slice(0, writers).map(async (ticket, w) => {
          for (let i = 0; performance.now() < end; i++) {
            let body: Record<string, unknown>;
            if (kind === 'description') body = { description: `Run ${writers}, writer ${w}, PATCH ${i}` };
            else {
              ticket.priority = ticket.priority === 'high' ? 'low' : 'high';
              body = { priority: ticket.priority };
            }
            const t0 = performance.now();
            const answer = await updateTicket(ticketEvent('PATCH', ticket.uuid, caller, body), lambdaContext);
            latencies.push(performance.now() - t0);
            answers[answer.statusCode] = (answers[answer.statusCode] ?? 0) + 1;
            // A PATCH that did not land leaves the priority as it was.
            if (answer.statusCode !== 200 && kind === 'priority')
              ticket.priority = ticket.priority === 'high' ? 'low' : 'high';
          }
        }),
      );
      const elapsed = (performance.now() - started) / 1000;
      const placesAfter = await eventSequence(account.accountId);
      const eventsCommitted = (await countEvents(account.accountId, 0, ALL_PLACES)) - eventsBefore;
      latencies.sort((a, b) => a - b);
      const run: HotRun = {
        kind,
        writers,
        seconds: round(elapsed, 1),
        answers,
        eventsCommitted,
        placesTaken: placesAfter - placesBefore,
        eventsPerSecond: round(eventsCommitted / elapsed, 1),
        conflicts: [...failures]
          .filter(([k]) => k.includes('TransactionConflict'))
          .reduce((n, [, v]) => n + v, 0),
        failures: Object.fromEntries(failures),
        p50Ms: round(percentile(latencies, 50)),
        p99Ms: round(percentile(latencies, 99)),
      };
      runs.push(run);
      log(
        `  PATCH ${kind.padEnd(12)} N=${String(writers).padStart(2)}: ${String(run.eventsPerSecond).padStart(6)} events/s (${eventsCommitted} events, ${run.placesTaken} places)  p50 ${run.p50Ms} ms  p99 ${run.p99Ms} ms  answers ${JSON.stringify(answers)}  conflicts ${run.conflicts}  503 ${answers[503] ?? 0}${failures.size ? `  failures ${JSON.stringify(run.failures)}` : ''}`,
      );
    }
  }
  return { note: HOT_NOTE, runs };
}

/** Places the account's shard counters have handed out (or been moved past). */
async function eventSequence(accountId: string): Promise<number> {
  const counters = await Promise.all(
    Array.from({ length: EVENT_SHARDS }, (_, k) =>
      dynamo.send(
        new GetCommand({
          TableName: tableName(),
          Key: eventKeys.counter(accountId, k),
          ConsistentRead: true,
        }),
      ),
    ),
  );
  return counters.reduce((sum, { Item }) => sum + (Item?.n === undefined ? 0 : Number(Item.n) + 1), 0);
}

const ALL_PLACES = 99_999_999_999_999;

/** The event items (not void places) at places `from` to `to` of the account's feed (all its partitions). */
const countEvents = async (accountId: string, from: number, to: number) => {
  const counts = await Promise.all(
    eventKeys.partitions(accountId).map((pk) =>
      countItems(dynamo, {
        tableName: tableName(),
        pk,
        range: { from: eventKeys.sort(from), to: eventKeys.sort(to) },
        attribute: 'type',
        value: eventKeys.itemType.event,
      }),
    ),
  );
  return counts.reduce((a, b) => a + b, 0);
};
