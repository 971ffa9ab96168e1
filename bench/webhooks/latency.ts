import { loadavg } from 'node:os';
import { benchAccount } from '../lib/account.ts';
import { log } from '../lib/measure.ts';
import { percentile, round } from '../lib/stats.ts';
import { type CostOf, costOf, printCost } from './cost.ts';
import { type Account, type Registered, sleep, type WebhookRig, waitUntil } from './rig.ts';

/**
 * Latency: ticket creates and updates through the in-process handlers at a steady rate; for each change, from its
 * 2xx answer to the receiver holding the verified delivery of its event at each endpoint (matched by the ticket's
 * uuid and the event's version, which the answer's ETag gives).
 */

export interface LatencyRun {
  endpoints: number;
  changes: number;
  creates: number;
  updates: number;
  /** The changes' pace (open loop: each started at its time, whatever the previous did). */
  perSecond: number;
  /** (change, endpoint) pairs whose delivery arrived verified, of changes × endpoints. */
  delivered: number;
  /** Deliveries that arrived more than once (same webhook-id at one endpoint), and that failed verification. */
  duplicates: number;
  unverified: number;
  /** ms from a change's 2xx answer to a receiver holding its verified delivery, over every (change, endpoint). */
  p50: number;
  p90: number;
  p99: number;
  max: number;
  min: number;
  /** p50 at the endpoint the fan-out serves first (the oldest) and last (the newest), with more than one. */
  firstEndpointP50?: number;
  lastEndpointP50?: number;
  /** The changes' own answers (in-process handler), ms: how loaded the machine was, too. */
  changeP50: number;
  /** The machine's 1-minute load average at the run's end (2 cores). */
  load: number;
  cost: CostOf;
}

/**
 * The first latency run: one endpoint on `*` in an account of its own, after a warm-up (not measured: the
 * handlers, the dispatcher's paths and the receiver) that also makes the tickets the run updates.
 */
export async function latencyAtOneEndpoint(rig: WebhookRig, changes: number): Promise<LatencyRun> {
  const lat = await benchAccount('bench-webhooks-latency');
  const latEndpoint = await rig.register(lat);
  const pool: string[] = [];
  for (let i = 0; i < 10; i++) pool.push(await rig.create(lat));
  for (const uuid of pool) await rig.update(lat, uuid);
  await waitUntil(
    () => rig.receivers.arrivals(latEndpoint.path).size >= 20,
    30_000,
    'the warm-up deliveries',
  );
  await sleep(1000);
  return latencyRun(rig, lat, [latEndpoint], pool, changes, 10);
}

/**
 * `changes` changes at `perSecond` (every other one a create, the others PATCHes of the pool's tickets), timed
 * from each one's 2xx answer to its event's verified arrival at each endpoint.
 */
export async function latencyRun(
  rig: WebhookRig,
  acc: Account,
  endpoints: Registered[],
  pool: string[],
  changes: number,
  perSecond: number,
): Promise<LatencyRun> {
  log(
    `webhooks: commit-to-delivery latency, ${changes} ticket changes at ${perSecond}/s, ${endpoints.length} endpoint${endpoints.length > 1 ? 's' : ''} on *`,
  );
  const keyOf = (type: string, uuid: string, version: number) => `${type}:${uuid}:${version}`;
  const answered = new Map<string, number>();
  const changeMs: number[] = [];
  const duplicatesBefore = rig.duplicatesAt(endpoints);
  const unverifiedBefore = rig.receivers.totals.unverified;
  rig.calls.start();
  const started = performance.now();
  const interval = 1000 / perSecond;
  await Promise.all(
    Array.from({ length: changes }, async (_, i) => {
      await sleep(Math.max(0, started + i * interval - performance.now()));
      const t0 = performance.now();
      if (i % 2 === 0) {
        const uuid = await rig.create(acc);
        answered.set(keyOf('ticket.created', uuid, 1), performance.now());
      } else {
        const uuid = pool[(i >> 1) % pool.length] as string;
        const version = await rig.update(acc, uuid);
        answered.set(keyOf('ticket.updated', uuid, version), performance.now());
      }
      changeMs.push(performance.now() - t0);
    }),
  );
  const arrivedAt = (e: Registered) => {
    const byKey = new Map<string, number>();
    for (const a of rig.receivers.arrivals(e.path).values())
      byKey.set(keyOf(a.body.type, a.body.data.object.uuid ?? '', a.body.data.version), a.at);
    return byKey;
  };
  const missing = () =>
    endpoints.map((e) => {
      const arrived = arrivedAt(e);
      return [...answered.keys()].filter((k) => !arrived.has(k)).length;
    });
  try {
    await waitUntil(() => missing().every((n) => n === 0), 120_000, 'every change delivered');
  } catch (error) {
    // What the store says of the deliveries that did not arrive: a bench that stops must say why.
    const lines = [
      `missing deliveries by endpoint: ${missing().join(', ')}; deliveries that failed verification: ${rig.receivers.totals.unverified}; the dispatcher logged: ${rig.dispatcherLog.join(' | ') || 'nothing'}`,
    ];
    for (const e of endpoints.filter((_, i) => (missing()[i] ?? 0) > 0))
      lines.push(...(await rig.unfinished(acc.accountId, e.id)));
    log(lines.join('\n'));
    throw error;
  }
  const seconds = (performance.now() - started) / 1000;
  const cost = costOf(rig.calls.stop(), changes * endpoints.length, seconds);
  const latencies = endpoints.map((e) => {
    const arrived = arrivedAt(e);
    return [...answered].map(([k, at]) => (arrived.get(k) ?? Number.NaN) - at).sort((a, b) => a - b);
  });
  const all = latencies.flat().sort((a, b) => a - b);
  const run: LatencyRun = {
    endpoints: endpoints.length,
    changes,
    creates: Math.ceil(changes / 2),
    updates: Math.floor(changes / 2),
    perSecond,
    delivered: all.filter((x) => !Number.isNaN(x)).length,
    duplicates: rig.duplicatesAt(endpoints) - duplicatesBefore,
    unverified: rig.receivers.totals.unverified - unverifiedBefore,
    p50: round(percentile(all, 50)),
    p90: round(percentile(all, 90)),
    p99: round(percentile(all, 99)),
    max: round(all.at(-1) ?? Number.NaN),
    min: round(all[0] ?? Number.NaN),
    ...(endpoints.length > 1
      ? {
          firstEndpointP50: round(percentile(latencies[0] ?? [], 50)),
          lastEndpointP50: round(percentile(latencies.at(-1) ?? [], 50)),
        }
      : {}),
    changeP50: round(
      percentile(
        changeMs.sort((a, b) => a - b),
        50,
      ),
    ),
    load: round(loadavg()[0] ?? 0),
    cost,
  };
  log(
    `  change answered → verified at the receiver: p50 ${run.p50} ms  p90 ${run.p90} ms  p99 ${run.p99} ms  max ${run.max} ms${run.firstEndpointP50 === undefined ? '' : `  (p50 at the first endpoint ${run.firstEndpointP50} ms, at the last ${run.lastEndpointP50} ms)`}; ${run.delivered}/${changes * endpoints.length} delivered, duplicates ${run.duplicates}, unverified ${run.unverified}; the change itself p50 ${run.changeP50} ms; load ${run.load}`,
  );
  printCost(run.cost);
  return run;
}
