import { execFileSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { ROOT } from '#infra/local/environment.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { attemptTimeoutMs } from '#lib/webhooks/deliver.ts';
import { log } from './lib/measure.ts';
import { runPart } from './lib/part.ts';
import { round } from './lib/stats.ts';
import { idleCost, type PurposeRow, sampleItems } from './webhooks/cost.ts';
import { type LatencyRun, latencyAtOneEndpoint, latencyRun } from './webhooks/latency.ts';
import { sleep, WebhookRig } from './webhooks/rig.ts';
import { type ThroughputRun, throughputRun } from './webhooks/throughput.ts';

/**
 * Webhooks (issue 21; decisions.md, "Webhooks"; docs/webhooks.md): the dispatcher as `npm start` runs it (the
 * stream reader and the due runner of infra/local/webhooks.ts, in this process, on the bench's own DynamoDB Local,
 * their defaults unchanged), delivering to real receivers on 127.0.0.1 that verify every delivery with the
 * standardwebhooks library and answer 200 at once.
 *
 * 1. Latency (bench/webhooks/latency.ts): ticket creates and updates through the in-process handlers at a steady
 *    rate, one endpoint subscribed to `*`; for each change, from its 2xx answer to the receiver holding the verified
 *    delivery of its event (matched by the ticket's uuid and the event's version, which the answer's ETag gives).
 * 2. Throughput (bench/webhooks/throughput.ts): the dispatcher stopped, N ticket creates (N events) in an account
 *    with 1 endpoint, then one with 20 endpoints, all subscribed to `*`; the dispatcher started again (it resumes
 *    from its stream checkpoint, as `npm start` does after a restart), timed until every delivery is recorded as
 *    succeeded.
 * 3. Store cost (bench/webhooks/cost.ts): every DynamoDB call the dispatcher made in each run, named by what it is
 *    for (bench/lib/store-calls.ts), with its items and write units, per delivery; the totals checked against
 *    test/support/dynamo-figures.ts's figuresOf over the same window; the dispatcher's calls when idle; its items'
 *    sizes.
 * What they share (the dispatcher, the receivers, the changes, the bench's own reads): bench/webhooks/rig.ts.
 */

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

export async function runWebhookSuite(options: {
  quick: boolean;
  endpoint: string;
}): Promise<WebhookResults> {
  const loadAtStart = loadavg().map((n) => round(n));
  // The local stage, as the local gateway marks its functions: http://127.0.0.1:<port> may be registered.
  process.env[STAGE_VARIABLE] = LOCAL_STAGE;
  const rig = await WebhookRig.start(options.endpoint, process.env.TABLE_NAME ?? '');
  try {
    rig.dispatcher = await rig.startDispatcher();

    // `--throughput`: the throughput runs alone (BENCH_WEBHOOK_EVENTS events each; BENCH_WEBHOOK_RECEIVER_MS for the
    // receivers' own latency): what the before/after figures of docs/capacity.md ("Webhook deliveries") come from.
    // `--one-endpoint`: the one endpoint's run alone (one endpoint's rate, issue 40).
    const throughputOnly = process.argv.includes('--throughput');
    const oneEndpoint = process.argv.includes('--one-endpoint');
    const events = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 0);

    // 1. Latency, one endpoint
    const latency = throughputOnly ? [] : [await latencyAtOneEndpoint(rig, options.quick ? 60 : 300)];

    // Idle
    await sleep(1000);
    const idle = throughputOnly ? { seconds: 0, byPurpose: [] } : await idleCost(rig, options.quick ? 2 : 5);

    // 2. Throughput
    const one = await throughputRun(rig, 1, events || (options.quick ? 100 : 500));
    const twenty = oneEndpoint
      ? undefined
      : await throughputRun(rig, 20, events || (options.quick ? 15 : 500));
    const throughput = twenty ? [one.run, twenty.run] : [one.run];
    if (twenty && !options.quick && !throughputOnly) {
      // Latency again, at 20 endpoints: each change fans out to 20 deliveries (2 a second: 40 deliveries a second).
      await sleep(1000);
      latency.push(await latencyRun(rig, twenty.acc, twenty.registered, twenty.pool, 100, 2));
    }

    // 3. Cost: each run's above; the items' sizes here.
    const sampled = one.registered[0];
    const sample = sampled ? await sampleItems(rig, one.acc.accountId, sampled.id) : {};
    return {
      loadAverage: { start: loadAtStart, end: loadavg().map((n) => round(n)) },
      settings: {
        pollMs: 250,
        perEndpoint: Number(process.env.WEBHOOK_CONCURRENCY_PER_ENDPOINT ?? 48),
        perAccount: 48,
        global: 128,
        attemptTimeoutMs: attemptTimeoutMs(),
      },
      latency,
      throughput,
      idle,
      itemBytes: sample,
      dispatcherLog: rig.dispatcherLog,
    };
  } finally {
    await rig.close();
  }
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
    measure: async () => ({ webhooks: await runWebhookSuite(options) }),
  });
}
