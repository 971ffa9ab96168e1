import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { handler as createRule } from '#functions/rules-create.ts';
import { orderKeyOfUuid } from '#lib/data/index/order-key.ts';
import { storedOf } from '#lib/data/index/reads.ts';
import { ruleSweepLeft } from '#lib/data/rules/sweep-lanes.ts';
import { batchGetAll, dynamo } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { RULE_SWEEP_DELAY_MS } from '#lib/rules/sweep.ts';
import { ruleSweepPass } from '#lib/rules/sweep-runner.ts';
import type { Ticket, TicketStatus } from '#lib/tickets/types.ts';
import { nowMicros, parseTimestamp } from '#lib/time.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { seedTickets } from '#test/support/ticket-seeder.ts';
import { benchAccount } from './lib/account.ts';
import { expectStatus, log } from './lib/measure.ts';
import { RUNS } from './lib/part.ts';
import { machineUnderLoad, round } from './lib/stats.ts';
import { origin, StoreCalls } from './lib/store-calls.ts';

/**
 * `npm run bench -- --sweep` (docs/rules.md, "Moments of tickets already there", and docs/capacity.md, "Rules and
 * macros", quote it; never published): how long a rule write's moment sweep takes over one account's not-closed
 * tickets. One account, TICKETS tickets (SWEEP_BENCH_TICKETS, default 20,000) seeded with what lists read
 * (test/support/ticket-seeder.ts, listsOnly: the sweep reads the status postings and the tickets), a quarter in each
 * not-closed status, created over the last TICKETS seconds; then a time rule (`created_at` + 24 hours, no
 * condition: every ticket's moment moves) written through the handler, and the runner's pass (ruleSweepPass, as
 * runClearings runs it) run again and again from the moment the sweep is due until no sweep item is left. Prints the
 * seconds, tickets a second, the store calls and write units a ticket, and how many tickets have the rule's moment
 * after it (all, or the sweep missed some). To bench/runs/results-sweep.json. It asserts nothing.
 * `SWEEP_BENCH_CALL_MS=10`: each of the sweep's store calls waits 10 ms first, as a deployed round trip would.
 */
const TICKETS = Number(process.env.SWEEP_BENCH_TICKETS ?? 20_000);
/**
 * A wait added before each of the sweep's store calls (SWEEP_BENCH_CALL_MS, default 0): DynamoDB Local in-process
 * answers in well under a millisecond of network, so the sweep is bound by the store's CPU; deployed, a call costs
 * a round trip of a few milliseconds, and a chain of steps is bound by those. The wait stands for that.
 */
const CALL_MS = Number(process.env.SWEEP_BENCH_CALL_MS ?? 0);
const STATUSES: TicketStatus[] = ['open', 'pending', 'in_progress', 'resolved'];
const HOUR_US = 3_600_000_000;
const MINUTE_US = 60_000_000;

export async function runSweepOnly(_options: { endpoint: string }) {
  const account = await benchAccount(`bench-sweep-${Date.now()}`);
  const { accountId } = account;
  const startUs = nowMicros() - TICKETS * 1_000_000;
  log(`seeding ${TICKETS} not-closed tickets, a quarter in each status`);
  const seeded = await seedTickets(
    accountId,
    Array.from({ length: TICKETS }, (_, i) => ({
      subject: `T ${i}`,
      description: 'd',
      requester_email: `r${i % 20}@bench.example`,
    })),
    {
      listsOnly: true,
      createdUs: (i) => startUs + i * 1_000_000,
      shape: (ticket) => ({ ...ticket, status: STATUSES[ticket.number % STATUSES.length] as TicketStatus }),
    },
  );
  const rule = {
    name: 'A day old',
    on: 'time',
    time: { after_minutes: 24 * 60, since: 'created_at' },
    conditions: { all: [] },
    actions: [{ type: 'add_tags', tags: ['a-day-old'] }],
  };
  const caller = callerOf(account);
  await expectStatus(
    createRule(proxyEvent({ method: 'POST', path: '/api/rules', caller, body: rule }), lambdaContext),
    201,
  );
  log(`rule written; the sweep is due in ${RULE_SWEEP_DELAY_MS} ms`);
  await new Promise((resolve) => setTimeout(resolve, RULE_SWEEP_DELAY_MS + 100));
  const calls = new StoreCalls(dynamo);
  if (CALL_MS > 0)
    dynamo.middlewareStack.add(
      (next) => async (args) => {
        if (origin.getStore() === 'sweep') await new Promise((resolve) => setTimeout(resolve, CALL_MS));
        return next(args);
      },
      { step: 'initialize', name: 'benchCallWait' },
    );
  const loadBefore = loadavg()[0] ?? 0;
  const cursors = new Map();
  let passes = 0;
  let failed = 0;
  calls.start();
  const started = performance.now();
  await origin.run('sweep', async () => {
    // The bench's own look at what is left is not the sweep's: counted apart.
    while (await origin.run('bench', () => sweepLeft(accountId))) {
      const pass = await ruleSweepPass({ cursors });
      passes++;
      failed += pass.failed;
      // A step postponed (failed): its entry is due again a few seconds on.
      if (!pass.more && pass.done === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
  const seconds = (performance.now() - started) / 1000;
  const tallies = calls.stop().get('sweep') ?? new Map();
  const sum = (field: 'itemsWritten' | 'writeUnits' | 'calls' | 'readUnits') =>
    [...tallies.values()].reduce((n, t) => n + t[field], 0);
  log(`swept in ${round(seconds, 2)} s over ${passes} passes; checking every ticket's moment`);
  const swept = await withMoment(accountId, seeded);
  const results = {
    mode: 'sweep',
    callWaitMs: CALL_MS,
    machine: machineUnderLoad(loadBefore),
    tickets: TICKETS,
    seconds: round(seconds, 2),
    ticketsPerSecond: round(TICKETS / seconds, 1),
    passes,
    failedSteps: failed,
    withTheRulesMoment: swept,
    perTicket: {
      calls: round(sum('calls') / TICKETS, 3),
      itemsWritten: round(sum('itemsWritten') / TICKETS, 3),
      writeUnits: round(sum('writeUnits') / TICKETS, 2),
    },
    calls: [...tallies].reduce<Record<string, number>>((all, [purpose, t]) => {
      const what = String(purpose).split(':')[0] as string;
      all[what] = (all[what] ?? 0) + t.calls;
      return all;
    }, {}),
  };
  mkdirSync(RUNS, { recursive: true });
  writeFileSync(join(RUNS, 'results-sweep.json'), `${JSON.stringify(results, null, 2)}\n`);
  log(JSON.stringify(results, null, 2));
}

/** Whether any of the account's sweep is left: its root, or a lane. */
async function sweepLeft(accountId: string): Promise<boolean> {
  const { root, lanes } = await ruleSweepLeft(accountId);
  return root !== undefined || lanes.length > 0;
}

/** How many of the seeded tickets have the rule's moment (their creation + 24 hours, to the whole minute up). */
async function withMoment(accountId: string, seeded: Ticket[]): Promise<number> {
  const keys = seeded.map((t) => tickets.index.keys.item(accountId, orderKeyOfUuid(t.uuid) as string));
  // A thousand at a time: the store (one DynamoDB Local on a busy machine) answers each group in time.
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < keys.length; i += 1_000) items.push(...(await batchGetAll(keys.slice(i, i + 1_000))));
  const dueUs = (t: Ticket) =>
    Math.ceil((parseTimestamp(t.createdAt) + 24 * HOUR_US) / MINUTE_US) * MINUTE_US;
  return items
    .map((item) => storedOf<Ticket>(item).entity)
    .filter((t) => t.ruleDueAt && parseTimestamp(t.ruleDueAt) === dueUs(t)).length;
}
