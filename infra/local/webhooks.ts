import { intEnv } from '#lib/config/env.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { shardsOfRunner } from '#lib/data/webhooks/due-shards.ts';
import { nowMillis } from '#lib/time.ts';
import { DueRunner, type DueRunnerOptions } from '#lib/webhooks/due.ts';
import { stageConfigs } from '../config.ts';
import { StreamReader } from './stream-reader.ts';

/**
 * `npm start`'s webhook dispatcher (docs/webhooks.md, "Local and deployed"): the deployed stack's two functions in
 * one process, on the same code. The stream reader (infra/local/stream-reader.ts) does what the event source
 * mapping does for functions/webhooks-stream.ts, at least once. The due runners loop as functions/webhooks-due.ts
 * does, without the minute's end: a pool of `runners` (WEBHOOK_DUE_RUNNERS, by default the dev stage's,
 * infra/config.ts), each on its own due shards, as the deployed pool is.
 *
 * Load it once DYNAMODB_ENDPOINT and TABLE_NAME are set: the data layer's client reads them when it loads.
 */
export interface DispatcherOptions {
  /** DynamoDB Local's endpoint (its stream API is on the same port). */
  endpoint: string;
  tableName: string;
  /** Names this reader's checkpoints (tests run their own reader beside others on one table). */
  consumer?: string;
  /** Wait between two reads of a shard that had nothing new, and between two looks at the due index (ms). */
  pollMs?: number;
  runner?: Omit<DueRunnerOptions, 'onError' | 'shards'>;
  /** Due runners in the pool (1 to 16; WEBHOOK_DUE_RUNNERS, else the dev stage's webhookDueRunners). */
  runners?: number;
  /** Where errors the dispatcher goes on after are reported (at most one line per ERROR_EVERY_MS). */
  log?: (line: string) => void;
}

export interface Dispatcher {
  /** The due runners of the pool (tests, logs). */
  readonly runners: readonly DueRunner[];
  /** Stops reading and running; attempts still running get `graceMs` to finish (they are retried after). */
  stop(graceMs?: number): Promise<void>;
  /** Records handed to the fan-out, events among them, deliveries created (tests, logs). */
  readonly counts: { records: number; events: number; deliveries: number };
}

const ERROR_EVERY_MS = 10_000;

export async function startWebhookDispatcher(options: DispatcherOptions): Promise<Dispatcher> {
  // The local stage: receivers on this machine (http://127.0.0.1:<port>) may be delivered to (url-policy.ts).
  process.env[STAGE_VARIABLE] = LOCAL_STAGE;
  const pollMs = options.pollMs ?? 250;
  const log = options.log ?? ((line: string) => console.error(line));
  let lastError = 0;
  const reportError = (error: unknown) => {
    if (nowMillis() - lastError < ERROR_EVERY_MS) return;
    lastError = nowMillis();
    log(`webhooks: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)} (retrying)`);
  };

  const reader = await StreamReader.open({
    endpoint: options.endpoint,
    tableName: options.tableName,
    consumer: options.consumer ?? 'local',
    pollMs,
    onError: reportError,
  });
  const reading = reader.run();

  const { runners, running } = startDuePool({
    runners: options.runners,
    runner: { pollMs, ...options.runner },
    onError: reportError,
  });

  return {
    runners,
    counts: reader.counts,
    async stop(graceMs = 2000) {
      reader.stop();
      const stopping = Promise.all(runners.map((runner) => runner.stop()));
      await Promise.race([
        Promise.all([reading, stopping, running]),
        // A real bound: stopping waits for attempts in flight, whatever the service's clock.
        new Promise((resolve) => setTimeout(resolve, graceMs).unref()),
      ]);
      reader.destroy();
    },
  };
}

/**
 * The pool of due runners `npm start` runs: `runners` (WEBHOOK_DUE_RUNNERS, else the dev stage's
 * webhookDueRunners), each on its own due shards as the deployed pool's are, each running until stopped.
 */
export function startDuePool(options: {
  runners?: number | undefined;
  runner?: Omit<DueRunnerOptions, 'onError' | 'shards'>;
  onError: (error: unknown) => void;
}): { runners: DueRunner[]; running: Promise<unknown> } {
  const size = options.runners ?? intEnv('WEBHOOK_DUE_RUNNERS', stageConfigs.dev.webhookDueRunners);
  const runners = Array.from(
    { length: size },
    (_, place) =>
      new DueRunner({
        ...options.runner,
        shards: size === 1 ? undefined : shardsOfRunner(place, size),
        onError: options.onError,
      }),
  );
  return { runners, running: Promise.all(runners.map((r) => r.runUntil(Number.POSITIVE_INFINITY))) };
}
