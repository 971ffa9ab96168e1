import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { BatchGetCommand, DynamoDBDocumentClient, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { handler as createTicket } from '#functions/tickets-create.ts';
import { handler as updateTicket } from '#functions/tickets-update.ts';
import { handler as createWebhook } from '#functions/webhooks-create.ts';
import { localClient } from '#infra/local/dynamodb-local.ts';
import { ROOT } from '#infra/local/environment.ts';
import { type Dispatcher, startWebhookDispatcher } from '#infra/local/webhooks.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { dynamo } from '#lib/data/client.ts';
import { eventKeys, webhookDeliveryKeys, webhookKeys } from '#lib/data/keys.ts';
import { attemptTimeoutMs } from '#lib/webhooks/deliver.ts';
import { figuresOf, itemBytes, type RequestFigures } from '#test/support/dynamo-figures.ts';
import { callerOf, lambdaContext, proxyEvent, ticketEvent } from '#test/support/events.ts';
import { benchAccount } from './lib/account.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { percentile, round } from './lib/stats.ts';
import { type CallTally, origin, StoreCalls } from './lib/store-calls.ts';
import { startReceivers } from './lib/webhook-receiver.ts';

/**
 * Webhooks (issue 21; decisions.md, "Webhooks"; docs/webhooks.md): the dispatcher as `npm start` runs it (the
 * stream reader and the due runner of infra/local/webhooks.ts, in this process, on the bench's own DynamoDB Local,
 * their defaults unchanged), delivering to real receivers on 127.0.0.1 that verify every delivery with the
 * standardwebhooks library and answer 200 at once.
 *
 * 1. Latency: ticket creates and updates through the in-process handlers at a steady rate, one endpoint
 *    subscribed to `*`; for each change, from its 2xx answer to the receiver holding the verified delivery of its
 *    event (matched by the ticket's uuid and the event's version, which the answer's ETag gives).
 * 2. Throughput: the dispatcher stopped, N ticket creates (N events) in an account with 1 endpoint, then one with
 *    20 endpoints, all subscribed to `*`; the dispatcher started again (it resumes from its stream checkpoint, as
 *    `npm start` does after a restart), timed until every delivery is recorded as succeeded.
 * 3. Store cost: every DynamoDB call the dispatcher made in each run, named by what it is for (bench/lib/
 *    store-calls.ts), with its items and write units, per delivery; the totals checked against
 *    test/support/dynamo-figures.ts's figuresOf over the same window.
 */

export interface PurposeRow extends CallTally {
  purpose: string;
}

export interface CostOf {
  /** Deliveries the window's calls are divided by. */
  deliveries: number;
  seconds: number;
  /** The dispatcher's calls, by purpose, over the whole window. */
  byPurpose: PurposeRow[];
  /** Their sum. */
  total: CallTally;
  /**
   * figuresOf (test/support/dynamo-figures.ts) over the same window (throughput runs: every call of the process
   * in it is the dispatcher's), and whether it agrees with the tallies; its items written leave out DeleteItem.
   */
  figures?: Pick<RequestFigures, 'itemsRead' | 'itemsWritten' | 'writeUnits'> & {
    calls: number;
    agrees: boolean;
  };
}

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
  /** The machine's 1-minute load average at the run's end (2 cores). */
  load: number;
  cost: CostOf;
}

export interface WebhookResults {
  loadAverage: { start: number[]; end: number[] };
  /** The dispatcher's settings in these runs (its defaults: npm start's). */
  settings: {
    pollMs: number;
    perEndpoint: number;
    perAccount: number;
    global: number;
    attemptTimeoutMs: number;
  };
  /** One endpoint; and (full runs) 20 endpoints of one account. */
  latency: LatencyRun[];
  throughput: ThroughputRun[];
  /** The dispatcher idle (nothing to deliver): its calls a second. */
  idle: { seconds: number; byPurpose: PurposeRow[] };
  /** Sizes of the dispatcher's items as stored after the runs (bytes, DynamoDB's count). */
  itemBytes: Record<string, number>;
  /** Lines the dispatcher logged (errors it went on after). */
  dispatcherLog: string[];
}

const TICKET = {
  subject: 'Invoice missing for March',
  description: 'Bench ticket',
  requester_email: 'someone@client.test',
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Registered {
  path: number;
  id: string;
}

export async function runWebhookSuite(options: {
  quick: boolean;
  endpoint: string;
}): Promise<WebhookResults> {
  const loadAtStart = loadavg().map((n) => round(n));
  const tableName = process.env.TABLE_NAME ?? '';
  // The local stage, as the local gateway marks its functions: http://127.0.0.1:<port> may be registered.
  process.env[STAGE_VARIABLE] = LOCAL_STAGE;
  const calls = new StoreCalls(dynamo);
  // The bench's own reads (is everything delivered yet?) go through a client of their own: never counted.
  const own = DynamoDBDocumentClient.from(localClient(options.endpoint));
  const receivers = await startReceivers();
  const dispatcherLog: string[] = [];
  let dispatcher: Dispatcher | undefined;
  const startDispatcher = () =>
    origin.run('dispatcher', () =>
      startWebhookDispatcher({
        endpoint: options.endpoint,
        tableName,
        consumer: 'bench',
        log: (line) => dispatcherLog.push(line),
      }),
    );
  let paths = 0;
  /** Registers an endpoint through POST /api/webhooks, subscribed to `*`, on a path of its own. */
  const register = async (acc: { accountId: string }): Promise<Registered> => {
    const n = paths++;
    const answer = await createWebhook(
      proxyEvent({
        method: 'POST',
        path: '/api/webhooks',
        caller: callerOf(acc),
        body: { url: receivers.url(n), events: ['*'], description: `bench ${n}` },
      }),
      lambdaContext,
    );
    if (answer.statusCode !== 201) throw new Error(`POST /api/webhooks: ${answer.statusCode} ${answer.body}`);
    const data = JSON.parse(answer.body).data as { id: string; secret: string };
    receivers.useSecret(n, data.secret);
    return { path: n, id: data.id };
  };
  const create = async (acc: { accountId: string }) => {
    const answer = await createTicket(
      proxyEvent({ method: 'POST', path: '/api/tickets', caller: callerOf(acc), body: TICKET }),
      lambdaContext,
    );
    if (answer.statusCode !== 201) throw new Error(`create: ${answer.statusCode} ${answer.body}`);
    return String(JSON.parse(answer.body).ticket.uuid);
  };
  let patches = 0;
  /** A PATCH of the ticket's description: answers the version its ETag gives (the event's data.version). */
  const update = async (acc: { accountId: string }, uuid: string) => {
    const n = patches++;
    const answer = await updateTicket(
      ticketEvent('PATCH', uuid, callerOf(acc), { description: `Bench update ${n}` }),
      lambdaContext,
    );
    if (answer.statusCode !== 200) throw new Error(`update: ${answer.statusCode} ${answer.body}`);
    return Number(/\d+/.exec(String(answer.headers?.ETag))?.[0]);
  };

  /**
   * `changes` changes at `perSecond` (every other one a create, the others PATCHes of the pool's tickets), timed
   * from each one's 2xx answer to its event's verified arrival at each endpoint.
   */
  async function latencyRun(
    acc: { accountId: string },
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
    const duplicatesBefore = duplicatesAt(endpoints);
    const unverifiedBefore = receivers.totals.unverified;
    calls.start();
    const started = performance.now();
    const interval = 1000 / perSecond;
    await Promise.all(
      Array.from({ length: changes }, async (_, i) => {
        await sleep(Math.max(0, started + i * interval - performance.now()));
        const t0 = performance.now();
        if (i % 2 === 0) {
          const uuid = await create(acc);
          answered.set(keyOf('ticket.created', uuid, 1), performance.now());
        } else {
          const uuid = pool[(i >> 1) % pool.length] as string;
          const version = await update(acc, uuid);
          answered.set(keyOf('ticket.updated', uuid, version), performance.now());
        }
        changeMs.push(performance.now() - t0);
      }),
    );
    const arrivedAt = (e: Registered) => {
      const byKey = new Map<string, number>();
      for (const a of receivers.arrivals(e.path).values())
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
        `missing deliveries by endpoint: ${missing().join(', ')}; deliveries that failed verification: ${receivers.totals.unverified}; the dispatcher logged: ${dispatcherLog.join(' | ') || 'nothing'}`,
      ];
      for (const e of endpoints.filter((_, i) => (missing()[i] ?? 0) > 0))
        lines.push(...(await unfinished(own, tableName, acc.accountId, e.id)));
      log(lines.join('\n'));
      throw error;
    }
    const seconds = (performance.now() - started) / 1000;
    const cost = costOf(calls.stop(), changes * endpoints.length, seconds);
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
      duplicates: duplicatesAt(endpoints) - duplicatesBefore,
      unverified: receivers.totals.unverified - unverifiedBefore,
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

  const duplicatesAt = (endpoints: Registered[]) =>
    endpoints.reduce(
      (n, e) => n + [...receivers.arrivals(e.path).values()].reduce((m, a) => m + a.count - 1, 0),
      0,
    );

  /**
   * The dispatcher stopped, `eventCount` ticket creates (8 writers) in a new account with `endpointCount`
   * endpoints; then the dispatcher started, timed until every delivery is recorded as succeeded.
   */
  async function throughputRun(endpointCount: number, eventCount: number) {
    log(
      `webhooks: ${eventCount} events to ${endpointCount} endpoint${endpointCount > 1 ? 's' : ''} (all on *), written with the dispatcher stopped, then the dispatcher started`,
    );
    const acc = await benchAccount(`bench-webhooks-${endpointCount}`);
    const registered: Registered[] = [];
    for (let i = 0; i < endpointCount; i++) registered.push(await register(acc));
    await dispatcher?.stop();
    dispatcher = undefined;
    const pushStarted = performance.now();
    const uuids: string[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (uuids.length < eventCount) {
          const n = uuids.push('');
          uuids[n - 1] = await create(acc);
        }
      }),
    );
    const pushSeconds = round((performance.now() - pushStarted) / 1000, 1);
    const events = await countEvents(own, acc.accountId);
    const expected = events * endpointCount;
    log(`  ${events} events written in ${pushSeconds} s: ${expected} deliveries to make`);
    const duplicatesBefore = duplicatesAt(registered);
    const unverifiedBefore = receivers.totals.unverified;
    await sleep(1000);

    calls.start();
    const startedAt = Date.now();
    const started = performance.now();
    let fannedOutMs = Number.NaN;
    let running: Dispatcher | undefined;
    const figures = await figuresOf(async () => {
      running = await startDispatcher();
      for (;;) {
        if (Number.isNaN(fannedOutMs) && running.counts.deliveries >= expected)
          fannedOutMs = performance.now() - started;
        const marks = await endpointMarks(own, tableName, acc.accountId, registered);
        if (marks.attempts >= expected) return;
        if (performance.now() - started > 600_000) throw new Error('the deliveries took over 10 minutes');
        await sleep(100);
      }
    });
    dispatcher = running;
    const tallies = calls.stop();
    const marks = await endpointMarks(own, tableName, acc.accountId, registered);
    const allSucceededMs = marks.lastSuccessAt - startedAt;
    const arrivals = registered.map((r) => [...receivers.arrivals(r.path).values()]);
    const firstArrivalMs = Math.min(...arrivals.flat().map((a) => a.at)) - started;
    let succeeded = 0;
    for (const r of registered)
      succeeded += await countDeliveries(own, tableName, acc.accountId, r.id, 'succeeded');
    const cost = costOf(tallies, expected, allSucceededMs / 1000);
    const deletes = cost.byPurpose
      .filter((p) => p.purpose.startsWith('DeleteItem'))
      .reduce((n, p) => n + p.calls, 0);
    const fig = {
      calls: figures.operations.flat().length,
      itemsRead: figures.itemsRead,
      itemsWritten: figures.itemsWritten,
      writeUnits: figures.writeUnits,
    };
    cost.figures = {
      ...fig,
      agrees:
        fig.calls === cost.total.calls &&
        fig.itemsRead === cost.total.itemsRead &&
        fig.writeUnits === cost.total.writeUnits &&
        fig.itemsWritten === cost.total.itemsWritten - deletes,
    };
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
      duplicates: duplicatesAt(registered) - duplicatesBefore,
      unverified: receivers.totals.unverified - unverifiedBefore,
      load: round(loadavg()[0] ?? 0),
      cost,
    };
    if (run.succeeded !== expected || arrivals.some((a) => a.length !== events))
      throw new Error(
        `${endpointCount} endpoints: ${run.succeeded} of ${expected} deliveries succeeded; arrivals per endpoint ${arrivals.map((a) => a.length).join(',')}`,
      );
    log(
      `  all ${expected} deliveries succeeded ${allSucceededMs} ms after the dispatcher's start: ${run.deliveriesPerSecond} deliveries/s (fan-out done at ${run.fannedOutMs} ms, first arrival at ${run.firstArrivalMs} ms: ${run.deliveringPerSecond}/s from then); duplicates ${run.duplicates}, unverified ${run.unverified}; load ${run.load}`,
    );
    printCost(run.cost);
    return { run, acc, registered, pool: uuids.slice(0, 10) };
  }

  try {
    dispatcher = await startDispatcher();

    // 1. Latency, one endpoint ------------------------------------------------------------------------------------
    const lat = await benchAccount('bench-webhooks-latency');
    const latEndpoint = await register(lat);
    // Warm-up (not measured): the handlers, the dispatcher's paths and the receiver; and the tickets to update.
    const pool: string[] = [];
    for (let i = 0; i < 10; i++) pool.push(await create(lat));
    for (const uuid of pool) await update(lat, uuid);
    await waitUntil(() => receivers.arrivals(latEndpoint.path).size >= 20, 30_000, 'the warm-up deliveries');
    await sleep(1000);
    const latency = [await latencyRun(lat, [latEndpoint], pool, options.quick ? 60 : 300, 10)];

    // Idle ----------------------------------------------------------------------------------------------------------
    await sleep(1000);
    const idleSeconds = options.quick ? 2 : 5;
    calls.start();
    await sleep(idleSeconds * 1000);
    const idleCalls = calls.stop().get('dispatcher') ?? new Map<string, CallTally>();
    const per = (n: number) => round(n / idleSeconds);
    const idle = {
      seconds: idleSeconds,
      byPurpose: [...idleCalls].map(([purpose, t]) => ({
        purpose,
        calls: per(t.calls),
        itemsWritten: per(t.itemsWritten),
        writeUnits: per(t.writeUnits),
        indexWriteUnits: per(t.indexWriteUnits),
        itemsRead: per(t.itemsRead),
        readUnits: per(t.readUnits),
        ms: round(t.ms / Math.max(1, t.calls)),
      })),
    };
    log(
      `webhooks: idle for ${idleSeconds} s, calls a second: ${idle.byPurpose.map((p) => `${p.purpose} ${p.calls}`).join(', ') || 'none'}`,
    );

    // 2. Throughput ---------------------------------------------------------------------------------------------------
    const one = await throughputRun(1, options.quick ? 100 : 500);
    const twenty = await throughputRun(20, options.quick ? 15 : 500);
    const throughput = [one.run, twenty.run];
    if (!options.quick) {
      // Latency again, at 20 endpoints: each change fans out to 20 deliveries (2 a second: 40 deliveries a second).
      await sleep(1000);
      latency.push(await latencyRun(twenty.acc, twenty.registered, twenty.pool, 100, 2));
    }

    const sampled = one.registered[0];
    const sample = sampled ? await sampleItems(own, tableName, one.acc.accountId, sampled.id) : {};
    return {
      loadAverage: { start: loadAtStart, end: loadavg().map((n) => round(n)) },
      settings: {
        pollMs: 250,
        perEndpoint: Number(process.env.WEBHOOK_CONCURRENCY_PER_ENDPOINT ?? 4),
        perAccount: 16,
        global: 64,
        attemptTimeoutMs: attemptTimeoutMs(),
      },
      latency,
      throughput,
      idle,
      itemBytes: sample,
      dispatcherLog,
    };
  } finally {
    await dispatcher?.stop();
    await receivers.close();
    own.destroy();
  }
}

/** The window's tallies as a cost: the dispatcher's calls by purpose (most first), and their sum. */
function costOf(tallies: Map<string, Map<string, CallTally>>, deliveries: number, seconds: number): CostOf {
  const mine = tallies.get('dispatcher') ?? new Map<string, CallTally>();
  const byPurpose = [...mine]
    .map(([purpose, t]) => ({ purpose, ...t, readUnits: round(t.readUnits), ms: round(t.ms) }))
    .sort((a, b) => b.calls - a.calls);
  const total = byPurpose.reduce(
    (sum, t) => ({
      calls: sum.calls + t.calls,
      itemsWritten: sum.itemsWritten + t.itemsWritten,
      writeUnits: sum.writeUnits + t.writeUnits,
      indexWriteUnits: sum.indexWriteUnits + t.indexWriteUnits,
      itemsRead: sum.itemsRead + t.itemsRead,
      readUnits: round(sum.readUnits + t.readUnits),
      ms: round(sum.ms + t.ms),
    }),
    { calls: 0, itemsWritten: 0, writeUnits: 0, indexWriteUnits: 0, itemsRead: 0, readUnits: 0, ms: 0 },
  );
  return { deliveries, seconds: round(seconds, 2), byPurpose, total };
}

function printCost(cost: CostOf) {
  const per = (n: number) => round(n / cost.deliveries, 3);
  log(
    `  the dispatcher's store calls per delivery (${cost.deliveries} deliveries): ${per(cost.total.calls)} calls, ${per(cost.total.itemsWritten)} items written, ${per(cost.total.writeUnits)} write units (+${per(cost.total.indexWriteUnits)} gsi1, est.), ${per(cost.total.itemsRead)} items read, ${per(cost.total.readUnits)} read units`,
  );
  for (const p of cost.byPurpose)
    log(
      `    ${p.purpose.padEnd(48)} ${String(p.calls).padStart(6)} calls ${String(per(p.calls)).padStart(6)}/delivery  written ${per(p.itemsWritten)}  WU ${per(p.writeUnits)}+${per(p.indexWriteUnits)}  read ${per(p.itemsRead)}  RU ${per(p.readUnits)}  mean ${round(p.ms / p.calls, 1)} ms`,
    );
  const f = cost.figures;
  if (f)
    log(
      `    figuresOf over the same window: ${f.calls} calls, ${f.itemsWritten} items written (DeleteItem not counted), ${f.writeUnits} write units, ${f.itemsRead} items read: ${f.agrees ? 'agrees' : 'DISAGREES'} with the tallies`,
    );
}

async function waitUntil(done: () => boolean, timeoutMs: number, what: string) {
  const until = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** The event items of the account's feed (void places aside). */
async function countEvents(client: DynamoDBDocumentClient, accountId: string): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: process.env.TABLE_NAME,
        KeyConditionExpression: 'pk = :pk',
        FilterExpression: '#type = :event',
        ExpressionAttributeNames: { '#type': 'type' },
        ExpressionAttributeValues: { ':pk': eventKeys.feedPartition(accountId), ':event': 'event' },
        Select: 'COUNT',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return count;
}

/** The endpoints' recorded attempts (their attemptCount) and their latest success (epoch ms). */
async function endpointMarks(
  client: DynamoDBDocumentClient,
  tableName: string,
  accountId: string,
  endpoints: { id: string }[],
): Promise<{ attempts: number; lastSuccessAt: number }> {
  const { Responses } = await client.send(
    new BatchGetCommand({
      RequestItems: {
        [tableName]: {
          Keys: endpoints.map((e) => webhookKeys.endpoint(accountId, e.id)),
          ProjectionExpression: 'attemptCount, lastSuccessAt',
          ConsistentRead: true,
        },
      },
    }),
  );
  const items = Responses?.[tableName] ?? [];
  return {
    attempts: items.reduce((n, i) => n + Number(i.attemptCount ?? 0), 0),
    lastSuccessAt: Math.max(0, ...items.map((i) => Number(i.lastSuccessAt ?? 0))),
  };
}

async function countDeliveries(
  client: DynamoDBDocumentClient,
  tableName: string,
  accountId: string,
  endpointId: string,
  state: string,
): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await client.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: 'pk = :pk',
        FilterExpression: '#state = :state',
        ExpressionAttributeNames: { '#state': 'state' },
        ExpressionAttributeValues: {
          ':pk': webhookDeliveryKeys.delivery(accountId, endpointId, '').pk,
          ':state': state,
        },
        Select: 'COUNT',
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return count;
}

/** An endpoint's deliveries not succeeded, with the store's account of them (a bench that stopped says why). */
async function unfinished(
  client: DynamoDBDocumentClient,
  tableName: string,
  accountId: string,
  endpointId: string,
): Promise<string[]> {
  const { Items = [] } = await client.send(
    new QueryCommand({
      TableName: tableName,
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: '#state <> :succeeded',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: {
        ':pk': webhookDeliveryKeys.delivery(accountId, endpointId, '').pk,
        ':succeeded': 'succeeded',
      },
      ConsistentRead: true,
    }),
  );
  const { Item: endpoint } = await client.send(
    new GetCommand({
      TableName: tableName,
      Key: webhookKeys.endpoint(accountId, endpointId),
      ConsistentRead: true,
    }),
  );
  const { gsi1sk, leaseOwner, leaseUntil, attemptCount, enabled } = endpoint ?? {};
  return [
    `  endpoint ${endpointId}: ${JSON.stringify({ enabled, gsi1sk, leaseOwner, leaseUntil, attemptCount, now: Date.now() })}`,
    ...Items.map(
      (d) =>
        `    ${d.eventId} ${d.eventType}: ${JSON.stringify({ state: d.state, attempts: d.attempts, nextAt: d.nextAt, lastStatus: d.lastStatus, lastError: d.lastError, leaseOwner: d.leaseOwner, leaseUntil: d.leaseUntil })}`,
    ),
  ];
}

/** One of each of the dispatcher's items as stored after the runs, by its size (bytes as DynamoDB counts them). */
async function sampleItems(
  client: DynamoDBDocumentClient,
  tableName: string,
  accountId: string,
  endpointId: string,
): Promise<Record<string, number>> {
  const first = async (pk: string) =>
    (
      await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': pk },
          Limit: 1,
          ConsistentRead: true,
        }),
      )
    ).Items?.[0];
  const { Item: endpoint } = await client.send(
    new GetCommand({
      TableName: tableName,
      Key: webhookKeys.endpoint(accountId, endpointId),
      ConsistentRead: true,
    }),
  );
  const delivery = await first(webhookDeliveryKeys.delivery(accountId, endpointId, '').pk);
  const attempt = await first(webhookDeliveryKeys.attemptsPartition(accountId, endpointId));
  const event = delivery
    ? (
        await client.send(
          new QueryCommand({
            TableName: tableName,
            KeyConditionExpression: 'pk = :pk',
            FilterExpression: 'id = :id',
            ExpressionAttributeValues: { ':pk': eventKeys.feedPartition(accountId), ':id': delivery.eventId },
            ConsistentRead: true,
          }),
        )
      ).Items?.[0]
    : undefined;
  // Pending items are gone once delivered: one as the fan-out writes it (lib/data/webhook-deliveries.ts).
  const now = Date.now();
  const pending = {
    ...webhookDeliveryKeys.pending(accountId, endpointId, now, String(delivery?.eventId ?? '')),
    type: 'webhook_pending',
    eventId: delivery?.eventId,
    eventType: delivery?.eventType,
    expires_at: Math.floor(now / 1000) + 30 * 24 * 60 * 60,
  };
  const sizes: Record<string, number> = {};
  for (const [name, item] of Object.entries({ endpoint, delivery, pending, attempt, event }))
    if (item) sizes[name] = itemBytes(item);
  return sizes;
}

/**
 * `--webhooks`: the webhook part alone, written to bench/results-webhooks.json (`npx tsx bench/report.ts
 * bench/results-webhooks.json` renders it), after the floor (single calls on the same store: what the dispatcher's
 * calls cost at least).
 */
export async function runWebhooksOnly(options: { quick: boolean; endpoint: string }) {
  // The code measured: the commit, and any change to the service's code not committed yet (the dispatcher is
  // still being worked on in this worktree).
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  const code = {
    commit: git('rev-parse', '--short', 'HEAD'),
    uncommitted: git('status', '--porcelain', '--', 'lib', 'functions', 'infra')
      .split('\n')
      .map((line) => line.trim())
      .filter(Boolean),
  };
  log(
    `code: ${code.commit}${code.uncommitted.length ? ` with uncommitted changes: ${code.uncommitted.join(', ')}` : ''}`,
  );
  await runPart({
    file: 'results-webhooks.json',
    mode: `${options.quick ? 'quick' : 'full'}, webhooks only`,
    endpoint: options.endpoint,
    floorCalls: options.quick ? 50 : 200,
    preface: { code },
    formatted: true,
    measure: async () => ({ webhooks: await runWebhookSuite(options) }),
  });
}
