import { DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type Shard,
  type _Record as StreamsRecord,
} from '@aws-sdk/client-dynamodb-streams';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { intEnv } from '#lib/config/env.ts';
import { LOCAL_STAGE, STAGE_VARIABLE } from '#lib/config/stage.ts';
import { shardsOfRunner } from '#lib/data/due-shards.ts';
import { readCheckpoints, saveCheckpoint } from '#lib/data/stream-checkpoints.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { DueRunner, type DueRunnerOptions } from '#lib/webhooks/due.ts';
import { fanOut, type StreamRecord } from '#lib/webhooks/fan-out.ts';
import { stageConfigs } from '../config.ts';
import { localClient } from './dynamodb-local.ts';

/**
 * `npm start`'s webhook dispatcher (docs/webhooks.md, "Local and deployed"): the deployed stack's two functions in
 * one process, on the same code. The stream reader does what the event source mapping does for functions/
 * webhooks-stream.ts: it reads DynamoDB Local's stream of the table, every shard, parents before children, hands
 * each batch to the fan-out, and only then checkpoints the shard (its last sequence number, in the table), so a
 * restart resumes after the last batch fanned out (TRIM_HORIZON for a shard without a checkpoint) and a batch
 * interrupted is fanned out again: at least once, the fan-out being idempotent. The due runners loop as
 * functions/webhooks-due.ts does, without the minute's end: a pool of `runners` (WEBHOOK_DUE_RUNNERS, by default the
 * dev stage's, infra/config.ts), each on its own due shards, as the deployed pool is.
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
/** How often the stream's shards are listed again (new shards appear when DynamoDB rolls them). */
const DESCRIBE_EVERY_MS = 5_000;

interface ShardState {
  shard: Shard;
  iterator: string | undefined;
  /** The last sequence number fanned out (and so the position a new iterator starts after). */
  position: string | undefined;
  finished: boolean;
}

export async function startWebhookDispatcher(options: DispatcherOptions): Promise<Dispatcher> {
  // The local stage: receivers on this machine (http://127.0.0.1:<port>) may be delivered to (url-policy.ts).
  process.env[STAGE_VARIABLE] = LOCAL_STAGE;
  const consumer = options.consumer ?? 'local';
  const pollMs = options.pollMs ?? 250;
  const log = options.log ?? ((line: string) => console.error(line));
  let lastError = 0;
  const reportError = (error: unknown) => {
    if (nowMillis() - lastError < ERROR_EVERY_MS) return;
    lastError = nowMillis();
    log(`webhooks: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)} (retrying)`);
  };

  const streams = new DynamoDBStreamsClient({
    endpoint: options.endpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 1000, requestTimeout: 5000 },
  });
  const streamArn = await latestStreamArn(options.endpoint, options.tableName);
  const counts = { records: 0, events: 0, deliveries: 0 };
  const shards = new Map<string, ShardState>();
  let stopped = false;
  // The reader's waits are the service's clock's (lib/time.ts), ended at once by stop().
  const halt = new AbortController();
  const pause = (ms: number) => sleep(ms, halt.signal);

  async function describe(): Promise<void> {
    const checkpoints = await readCheckpoints(consumer, streamArn);
    let start: string | undefined;
    do {
      const { StreamDescription } = await streams.send(
        new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: start }),
      );
      for (const shard of StreamDescription?.Shards ?? []) {
        const id = shard.ShardId ?? '';
        if (shards.has(id)) continue;
        const checkpoint = checkpoints.get(id);
        shards.set(id, {
          shard,
          iterator: undefined,
          position: checkpoint?.sequenceNumber,
          finished: checkpoint?.finished ?? false,
        });
      }
      start = StreamDescription?.LastEvaluatedShardId;
    } while (start);
  }

  /** One read of a shard: answers how many records it fanned out. */
  async function readShard(state: ShardState): Promise<number> {
    const parent = state.shard.ParentShardId ? shards.get(state.shard.ParentShardId) : undefined;
    if (state.finished || (parent && !parent.finished)) return 0;
    if (!state.iterator) {
      const { ShardIterator } = await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: state.shard.ShardId,
          ...(state.position
            ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: state.position }
            : { ShardIteratorType: 'TRIM_HORIZON' }),
        }),
      );
      state.iterator = ShardIterator;
    }
    const { Records = [], NextShardIterator } = await streams.send(
      new GetRecordsCommand({ ShardIterator: state.iterator, Limit: 1000 }),
    );
    if (Records.length > 0) {
      const result = await fanOut(Records.map(streamRecordOf));
      if (result.failed.length > 0) {
        // Read again from the last position fanned out: those records are handed over again.
        state.iterator = undefined;
        throw new Error(`the fan-out of ${result.failed.length} stream records failed`);
      }
      counts.records += Records.length;
      counts.events += result.events;
      counts.deliveries += result.deliveries;
      state.position = Records.at(-1)?.dynamodb?.SequenceNumber ?? state.position;
      // A batch without events needs no checkpoint now (reading it again costs nothing): so the checkpoint's own
      // write, which the stream carries too, does not call for another.
      if (result.events > 0) await checkpoint(state);
    }
    state.iterator = NextShardIterator;
    if (!NextShardIterator) {
      state.finished = true;
      await checkpoint(state);
    }
    return Records.length;
  }

  async function checkpoint(state: ShardState): Promise<void> {
    await saveCheckpoint(consumer, streamArn, state.shard.ShardId ?? '', {
      sequenceNumber: state.position,
      finished: state.finished,
    });
  }

  const reading = (async () => {
    let described = 0;
    while (!stopped) {
      let read = 0;
      try {
        if (nowMillis() - described > DESCRIBE_EVERY_MS) {
          await describe();
          described = nowMillis();
        }
        for (const state of shards.values()) read += await readShard(state);
      } catch (error) {
        // The store restarting or stalled, an iterator expired: every shard starts again from its position.
        for (const state of shards.values()) state.iterator = undefined;
        described = 0;
        reportError(error);
        if (!stopped) await pause(1000);
        continue;
      }
      if (read === 0 && !stopped) await pause(pollMs);
    }
  })();

  const size = options.runners ?? intEnv('WEBHOOK_DUE_RUNNERS', stageConfigs.dev.webhookDueRunners);
  const runners = Array.from(
    { length: size },
    (_, place) =>
      new DueRunner({
        pollMs,
        ...options.runner,
        shards: size === 1 ? undefined : shardsOfRunner(place, size),
        onError: reportError,
      }),
  );
  const running = Promise.all(runners.map((runner) => runner.runUntil(Number.POSITIVE_INFINITY)));

  return {
    runners,
    counts,
    async stop(graceMs = 2000) {
      stopped = true;
      halt.abort();
      const stopping = Promise.all(runners.map((runner) => runner.stop()));
      await Promise.race([
        Promise.all([reading, stopping, running]),
        // A real bound: stopping waits for attempts in flight, whatever the service's clock.
        new Promise((resolve) => setTimeout(resolve, graceMs).unref()),
      ]);
      streams.destroy();
    },
  };
}

async function latestStreamArn(endpoint: string, tableName: string): Promise<string> {
  const client = localClient(endpoint);
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (!Table?.LatestStreamArn)
      throw new Error(`table ${tableName} has no stream (ensureTable turns it on)`);
    return Table.LatestStreamArn;
  } finally {
    client.destroy();
  }
}

/** A stream record as the fan-out takes it (the Lambda handler makes the same of its event's records). */
function streamRecordOf(record: StreamsRecord): StreamRecord {
  const image = record.dynamodb?.NewImage;
  return {
    eventName: record.eventName,
    sequenceNumber: record.dynamodb?.SequenceNumber ?? '',
    newImage: image ? unmarshall(image as Parameters<typeof unmarshall>[0]) : undefined,
  };
}
