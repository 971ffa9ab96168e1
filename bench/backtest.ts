import { loadavg } from 'node:os';
import { handler as postMessage } from '#functions/messages-create.ts';
import { handler as backtestRule } from '#functions/rules-backtest.ts';
import { handler as createRule } from '#functions/rules-create.ts';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { type EventDraft, eventItems } from '#lib/data/events.ts';
import { dynamo } from '#lib/data/store/client.ts';
import { MAX_BACKTEST_ITEMS } from '#lib/rules/backtest.ts';
import { nowMicros } from '#lib/time.ts';
import { itemBytes } from '#test/support/dynamo-figures.ts';
import { callerOf, lambdaContext, proxyEvent, routeEvent, ticketEvent } from '#test/support/events.ts';
import { benchAccount } from './lib/account.ts';
import { EventSeeder, eventTemplates } from './lib/event-seed.ts';
import { expectStatus, log, measurer } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { median, round } from './lib/stats.ts';

/**
 * `npm run bench -- --backtest [--quick]` (docs/rules.md, "Backtest", and docs/capacity.md, "Rules and macros",
 * quote it; never published): what a rule's backtest (`POST /api/rules/{rule}/backtest`) costs to read. A few real
 * tickets are made, changed and written to through the handlers in a source account, so its feed holds real
 * `ticket.created`, `ticket.updated` and `message.created` events; their bodies are copied in bulk into the feed
 * of the bench account (bench/lib/event-seed.ts, as the events part does): BACKTEST_BENCH_EVENTS events (50,000 by
 * default; --quick 10,000), one a millisecond a day ago. Then an `updated` rule's backtest over the whole window:
 * (a) one part of 5,000 feed items (the default and most `limit`): p50/p99, round trips, items read and an
 * estimate of its read units; (b) the whole window read by following `next_cursor`, five times: parts, seconds,
 * events a second. DynamoDB Local reports no consumed capacity for these reads, so read units are estimated from
 * the items' sizes: each call's items summed, rounded up to 4 KB, 0.5 RCU a 4 KB (eventually consistent reads, as
 * the window's are). To bench/runs/results-backtest.json. It reports, it asserts nothing.
 */

/** The seeded types, in their order, over and over: most changes are updates, as in a helpdesk's day. */
const MIX = [
  'ticket.created',
  'ticket.updated',
  'ticket.updated',
  'ticket.updated',
  'message.created',
  'ticket.updated',
  'ticket.updated',
  'message.created',
];

/** The rule measured: an update that moved the priority to high (the source's PATCHes do, so every update fires). */
const RULE = {
  name: 'Escalated',
  on: 'updated',
  conditions: { all: [{ field: 'priority', op: 'changed_to', value: 'high' }] },
  actions: [{ type: 'add_tags', tags: ['escalated'] }],
};

/** Times the whole window is read (the median is quoted). */
const WHOLE_RUNS = 5;

interface ReadEstimate {
  calls: number;
  items: number;
  bytes: number;
  /** Σ over calls of ⌈bytes / 4 KB⌉ × 0.5 (× 1 for a strongly consistent read). */
  readUnits: number;
  /** What DynamoDB Local reported (ConsumedCapacity), for comparison. */
  reportedUnits: number;
}

let estimate: ReadEstimate | undefined;

/** Adds the read estimate to the store client (once): the reads made while `estimate` is set are counted. */
function countReads() {
  dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const op = String(context.commandName);
      if (estimate && (op === 'QueryCommand' || op === 'GetItemCommand')) {
        const output = result.output as {
          Items?: Record<string, unknown>[];
          Item?: Record<string, unknown>;
          ConsumedCapacity?: { CapacityUnits?: number };
        };
        const items = output.Items ?? (output.Item ? [output.Item] : []);
        const bytes = items.reduce((n, item) => n + itemBytes(item), 0);
        const consistent = (args.input as { ConsistentRead?: boolean }).ConsistentRead === true;
        estimate.calls++;
        estimate.items += items.length;
        estimate.bytes += bytes;
        estimate.readUnits += Math.max(1, Math.ceil(bytes / 4096)) * (consistent ? 1 : 0.5);
        estimate.reportedUnits += output.ConsumedCapacity?.CapacityUnits ?? 0;
      }
      return result;
    },
    { step: 'initialize', name: 'benchBacktestReads', priority: 'low' },
  );
}

async function estimated<T>(fn: () => Promise<T>): Promise<{ value: T; reads: ReadEstimate }> {
  const reads = { calls: 0, items: 0, bytes: 0, readUnits: 0, reportedUnits: 0 };
  estimate = reads;
  try {
    return { value: await fn(), reads };
  } finally {
    estimate = undefined;
  }
}

export async function runBacktestOnly(options: { quick: boolean; endpoint: string }) {
  const events = Number(process.env.BACKTEST_BENCH_EVENTS ?? (options.quick ? 10_000 : 50_000));
  return runPart({
    file: 'results-backtest.json',
    mode: options.quick ? 'quick' : 'full',
    endpoint: options.endpoint,
    floorCalls: 50,
    measure: async (floor) => {
      countReads();
      const loadAtStart = loadavg().map((n) => round(n));
      const templates = await realEvents();
      const eventSizes = [...new Set(MIX)].map((type) => {
        const { items } = eventItems('sizing', 1, templates.get(type) as EventDraft, nowMicros());
        return { type, items: items.length, itemBytes: items.reduce((n, i) => n + itemBytes(i), 0) };
      });
      for (const s of eventSizes) log(`  event ${s.type.padEnd(16)} ${s.items} item(s), ≈${s.itemBytes} B`);

      const account = await benchAccount('bench-backtest');
      const caller = callerOf(account);
      const made = await expectStatus(
        createRule(proxyEvent({ method: 'POST', path: '/api/rules', caller, body: RULE }), lambdaContext),
        201,
      );
      const rule = String(JSON.parse(made.body).data.id);
      const seeder = new EventSeeder(account.accountId, templates, MIX);
      const seedSeconds = round(await seeder.seedTo(events), 1);
      log(`backtest: ${events.toLocaleString('en')} events seeded in ${seedSeconds} s`);
      // Settle after the bulk write (the store's garbage collector), as the events part does.
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      const from = new Date(seeder.startUs / 1000 - 60_000).toISOString();
      const backtest = async (after?: string) => {
        const body = { from, ...(after ? { after } : {}) };
        const answer = await expectStatus(
          backtestRule(
            routeEvent('POST', '/api/rules/{rule}/backtest', { rule }, caller, body),
            lambdaContext,
          ),
          200,
        );
        return JSON.parse(answer.body).data as {
          changes: number;
          would_fire: number;
          tickets: string[];
          next_cursor: string | null;
        };
      };

      // (a) One part: the window's first 5,000 feed items.
      log(`backtest: one part (limit ${MAX_BACKTEST_ITEMS}, the default) of an updated rule over the window`);
      const measure = measurer(floor, options.quick ? 10 : 20);
      const timed = await measure(`backtest part (${MAX_BACKTEST_ITEMS} items)`, () => backtest());
      const { value: first, reads } = await estimated(() => backtest());
      const part = {
        p50: timed.p50,
        p99: timed.p99,
        samples: timed.samples,
        roundTrips: timed.roundTrips,
        operations: timed.operations.map((rt) => `${rt.length} × ${[...new Set(rt)].join(', ')}`),
        itemsRead: timed.itemsRead,
        storeCalls: reads.calls,
        bytesRead: reads.bytes,
        estimatedReadUnits: reads.readUnits,
        reportedReadUnits: round(reads.reportedUnits, 1),
        answer: { changes: first.changes, would_fire: first.would_fire, next_cursor: first.next_cursor },
      };
      log(
        `  items ${reads.items} in ${reads.calls} calls, ${Math.round(reads.bytes / 1024)} KB: ≈${reads.readUnits} RCU (estimate; Local reported ${part.reportedReadUnits}); changes ${first.changes}, would fire ${first.would_fire}`,
      );

      // (b) The whole window, part after part.
      const whole = [];
      for (let run = 0; run < WHOLE_RUNS; run++) {
        const started = performance.now();
        const { value, reads: all } = await estimated(async () => {
          let parts = 0;
          let changes = 0;
          let wouldFire = 0;
          let after: string | undefined;
          do {
            const answer = await backtest(after);
            parts++;
            changes += answer.changes;
            wouldFire += answer.would_fire;
            after = answer.next_cursor ?? undefined;
          } while (after);
          return { parts, changes, wouldFire };
        });
        const seconds = (performance.now() - started) / 1000;
        const row = {
          ...value,
          seconds: round(seconds, 2),
          eventsPerSecond: Math.round(events / seconds),
          itemsRead: all.items,
          estimatedReadUnits: all.readUnits,
        };
        log(
          `  whole window: ${row.parts} parts, ${row.seconds} s, ${row.eventsPerSecond} events/s, ${row.itemsRead} items, ≈${row.estimatedReadUnits} RCU; changes ${row.changes}, would fire ${row.wouldFire}`,
        );
        whole.push(row);
      }
      return {
        // The machine is shared: its load average (1, 5, 15 minutes) when the part started and ended.
        loadAverage: { start: loadAtStart, end: loadavg().map((n) => round(n)) },
        events,
        mix: MIX,
        rule: RULE,
        eventSizes,
        seedSeconds,
        part,
        whole: {
          runs: whole,
          medianSeconds: median(whole.map((r) => r.seconds)),
          medianEventsPerSecond: median(whole.map((r) => r.eventsPerSecond)),
        },
        note:
          'Read units are estimated (DynamoDB Local reports none): per call, the items read summed, rounded up to ' +
          '4 KB, 0.5 RCU a 4 KB (eventually consistent).',
      };
    },
  });
}

/** Real events to copy: five tickets made, each PATCHed (priority to high, status pending) and written to. */
async function realEvents(): Promise<Map<string, EventDraft>> {
  log('backtest: real tickets, changes and messages in a source account');
  const source = await benchAccount('bench-backtest-source');
  const caller = callerOf(source);
  for (let i = 0; i < 5; i++) {
    const body = {
      subject: `Invoice ${i} missing`,
      description: 'The March invoice never came.',
      requester_email: `r${i}@bench.example`,
      tags: ['billing'],
    };
    const created = await expectStatus(
      createTicket(proxyEvent({ method: 'POST', path: '/api/tickets', caller, body }), lambdaContext),
      201,
    );
    const uuid = JSON.parse(created.body).ticket.uuid as string;
    await expectStatus(
      updateTicket(
        ticketEvent('PATCH', uuid, caller, { priority: 'high', status: 'pending' }),
        lambdaContext,
      ),
      200,
    );
    await expectStatus(
      postMessage(
        routeEvent('POST', '/api/tickets/{ticket}/messages', { ticket: uuid }, caller, {
          body: 'Any news on this? We need it for the audit.',
          author: 'requester',
        }),
        lambdaContext,
      ),
      201,
    );
  }
  return eventTemplates([source.accountId], [...new Set(MIX)]);
}
