import { loadavg } from 'node:os';
import type { Dispatcher } from '#infra/local/webhooks.ts';
import type { DueRunner } from '#lib/webhooks/due.ts';
import { figuresOf } from '#test/support/dynamo-figures.ts';
import { benchAccount } from '../lib/account.ts';
import { log } from '../lib/measure.ts';
import { round } from '../lib/stats.ts';
import { type CostOf, checkedAgainst, costOf, printCost } from './cost.ts';
import { type Registered, sleep, type WebhookRig } from './rig.ts';

/**
 * Throughput: the dispatcher stopped, N ticket creates (N events) in an account with its endpoints, all on `*`;
 * the dispatcher started again (it resumes from its stream checkpoint, as `npm start` does after a restart), timed
 * until every delivery is recorded as succeeded.
 */

export interface ThroughputRun {
  endpoints: number;
  events: number;
  deliveries: number;
  /** Seconds taken to write the events (8 writers), the dispatcher stopped. */
  pushSeconds: number;
  /** From the dispatcher's start: its fan-out had created every delivery (ms; seen every 100 ms). */
  fannedOutMs: number;
  /** From the dispatcher's start: the first delivery at a receiver, and the last delivery recorded succeeded. */
  firstArrivalMs: number;
  allSucceededMs: number;
  /** deliveries / allSucceededMs. */
  deliveriesPerSecond: number;
  /** deliveries / (allSucceededMs − firstArrivalMs): once attempts had started. */
  deliveringPerSecond: number;
  succeeded: number;
  duplicates: number;
  unverified: number;
  /** Connections the receivers accepted during the run (keep-alive: fewer than the deliveries). */
  connections: number;
  /** The machine's 1-minute load average at the run's end (2 cores). */
  load: number;
  cost: CostOf;
}

/**
 * The dispatcher stopped, `eventCount` ticket creates (8 writers) in a new account with `endpointCount`
 * endpoints; then the dispatcher started, timed until every delivery is recorded as succeeded.
 */
export async function throughputRun(rig: WebhookRig, endpointCount: number, eventCount: number) {
  log(
    `webhooks: ${eventCount} events to ${endpointCount} endpoint${endpointCount > 1 ? 's' : ''} (all on *), written with the dispatcher stopped, then the dispatcher started`,
  );
  const acc = await benchAccount(`bench-webhooks-${endpointCount}`);
  const registered: Registered[] = [];
  for (let i = 0; i < endpointCount; i++) registered.push(await rig.register(acc));
  await rig.dispatcher?.stop();
  rig.dispatcher = undefined;
  const pushStarted = performance.now();
  const uuids: string[] = [];
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (uuids.length < eventCount) {
        const n = uuids.push('');
        uuids[n - 1] = await rig.create(acc);
      }
    }),
  );
  const pushSeconds = round((performance.now() - pushStarted) / 1000, 1);
  const events = await rig.countEvents(acc.accountId);
  const expected = events * endpointCount;
  log(`  ${events} events written in ${pushSeconds} s: ${expected} deliveries to make`);
  const duplicatesBefore = rig.duplicatesAt(registered);
  const unverifiedBefore = rig.receivers.totals.unverified;
  const connectionsBefore = rig.receivers.totals.connections;
  await sleep(1000);

  rig.calls.start();
  const started = performance.now();
  let fannedOutMs = Number.NaN;
  let allSucceededMs = Number.NaN;
  let running: Dispatcher | undefined;
  // BENCH_WEBHOOK_FAN_OUT_FIRST=1: the due runners start once the fan-out has made every delivery, so their own
  // rate is timed (deliveringPerSecond: from the first arrival), not the fan-out's on this DynamoDB Local.
  const fanOutFirst = process.env.BENCH_WEBHOOK_FAN_OUT_FIRST === '1';
  let pool: DueRunner[] | undefined;
  const figures = await figuresOf(async () => {
    running = await rig.startDispatcher(fanOutFirst ? { runners: 0 } : {});
    for (;;) {
      if (Number.isNaN(fannedOutMs) && running.counts.deliveries >= expected) {
        fannedOutMs = performance.now() - started;
        if (fanOutFirst) pool = rig.startPool();
      }
      const marks = await rig.endpointMarks(acc.accountId, registered);
      // When the poll (every 100 ms) saw every attempt recorded: lastSuccessAt is written at most once a second.
      if (marks.attempts >= expected) {
        allSucceededMs = Math.round(performance.now() - started);
        return;
      }
      if (performance.now() - started > 600_000) throw new Error('the deliveries took over 10 minutes');
      await sleep(100);
    }
  });
  rig.dispatcher = running;
  await Promise.all((pool ?? []).map((r) => r.stop()));
  const tallies = rig.calls.stop();
  const arrivals = registered.map((r) => [...rig.receivers.arrivals(r.path).values()]);
  const firstArrivalMs = Math.min(...arrivals.flat().map((a) => a.at)) - started;
  let succeeded = 0;
  for (const r of registered) succeeded += await rig.countDeliveries(acc.accountId, r.id, 'succeeded');
  const cost = costOf(tallies, expected, allSucceededMs / 1000);
  cost.figures = checkedAgainst(cost, figures);
  const run: ThroughputRun = {
    endpoints: endpointCount,
    events,
    deliveries: expected,
    pushSeconds,
    fannedOutMs: round(fannedOutMs),
    firstArrivalMs: round(firstArrivalMs),
    allSucceededMs,
    deliveriesPerSecond: round(expected / (allSucceededMs / 1000), 1),
    deliveringPerSecond: round(expected / ((allSucceededMs - firstArrivalMs) / 1000), 1),
    succeeded,
    duplicates: rig.duplicatesAt(registered) - duplicatesBefore,
    unverified: rig.receivers.totals.unverified - unverifiedBefore,
    connections: rig.receivers.totals.connections - connectionsBefore,
    load: round(loadavg()[0] ?? 0),
    cost,
  };
  if (run.succeeded !== expected || arrivals.some((a) => a.length !== events))
    throw new Error(
      `${endpointCount} endpoints: ${run.succeeded} of ${expected} deliveries succeeded; arrivals per endpoint ${arrivals.map((a) => a.length).join(',')}`,
    );
  log(
    `  all ${expected} deliveries succeeded ${allSucceededMs} ms after the dispatcher's start: ${run.deliveriesPerSecond} deliveries/s (fan-out done at ${run.fannedOutMs} ms, first arrival at ${run.firstArrivalMs} ms: ${run.deliveringPerSecond}/s from then); duplicates ${run.duplicates}, unverified ${run.unverified}, connections ${run.connections}; load ${run.load}`,
  );
  printCost(run.cost);
  return { run, acc, registered, pool: uuids.slice(0, 10) };
}
