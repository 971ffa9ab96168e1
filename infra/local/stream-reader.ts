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
import { readCheckpoints, saveCheckpoint } from '#lib/data/webhooks/stream-checkpoints.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { fanOut, type StreamRecord } from '#lib/webhooks/fan-out.ts';
import { localClient } from './dynamodb-local.ts';

/**
 * The webhook dispatcher's stream reader (infra/local/webhooks.ts): what the event source mapping does for
 * functions/webhooks-stream.ts. It reads DynamoDB Local's stream of the table, every shard, parents before
 * children, hands each batch to the fan-out, and only then checkpoints the shard (its last sequence number, in the
 * table), so a restart resumes after the last batch fanned out (TRIM_HORIZON for a shard without a checkpoint) and
 * a batch interrupted is fanned out again: at least once, the fan-out being idempotent.
 */

/** How often the stream's shards are listed again (new shards appear when DynamoDB rolls them). */
const DESCRIBE_EVERY_MS = 5_000;

interface ShardState {
  shard: Shard;
  iterator: string | undefined;
  /** The last sequence number fanned out (and so the position a new iterator starts after). */
  position: string | undefined;
  finished: boolean;
}

export interface StreamReaderOptions {
  /** DynamoDB Local's endpoint (its stream API is on the same port). */
  endpoint: string;
  tableName: string;
  /** Names this reader's checkpoints. */
  consumer: string;
  /** Wait between two reads of a shard that had nothing new (ms). */
  pollMs: number;
  /** Errors the reader goes on after (it reads every shard again from its position). */
  onError: (error: unknown) => void;
}

export class StreamReader {
  /** Records handed to the fan-out, events among them, deliveries created (tests, logs). */
  readonly counts = { records: 0, events: 0, deliveries: 0 };
  private readonly shards = new Map<string, ShardState>();
  private stopped = false;
  // The reader's waits are the service's clock's (lib/time.ts), ended at once by stop().
  private readonly halt = new AbortController();

  private constructor(
    private readonly streams: DynamoDBStreamsClient,
    private readonly streamArn: string,
    private readonly options: StreamReaderOptions,
  ) {}

  /** A reader of the table's latest stream (not reading yet: run()). */
  static async open(options: StreamReaderOptions): Promise<StreamReader> {
    const streams = new DynamoDBStreamsClient({
      endpoint: options.endpoint,
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
      requestHandler: { connectionTimeout: 1000, requestTimeout: 5000 },
    });
    return new StreamReader(streams, await latestStreamArn(options.endpoint, options.tableName), options);
  }

  /** Reads until stop(): every shard in turn, a pause when none had anything new. */
  async run(): Promise<void> {
    let described = 0;
    while (!this.stopped) {
      let read = 0;
      try {
        if (nowMillis() - described > DESCRIBE_EVERY_MS) {
          await this.describe();
          described = nowMillis();
        }
        for (const state of this.shards.values()) read += await this.readShard(state);
      } catch (error) {
        // The store restarting or stalled, an iterator expired: every shard starts again from its position.
        for (const state of this.shards.values()) state.iterator = undefined;
        described = 0;
        this.options.onError(error);
        if (!this.stopped) await this.pause(1000);
        continue;
      }
      if (read === 0 && !this.stopped) await this.pause(this.options.pollMs);
    }
  }

  /** Ends the loop at its next turn (its wait, if it waits, at once). */
  stop(): void {
    this.stopped = true;
    this.halt.abort();
  }

  destroy(): void {
    this.streams.destroy();
  }

  private pause(ms: number) {
    return sleep(ms, this.halt.signal);
  }

  /** The stream's shards not known yet, each from its checkpoint. */
  private async describe(): Promise<void> {
    const checkpoints = await readCheckpoints(this.options.consumer, this.streamArn);
    let start: string | undefined;
    do {
      const { StreamDescription } = await this.streams.send(
        new DescribeStreamCommand({ StreamArn: this.streamArn, ExclusiveStartShardId: start }),
      );
      for (const shard of StreamDescription?.Shards ?? []) {
        const id = shard.ShardId ?? '';
        if (this.shards.has(id)) continue;
        const checkpoint = checkpoints.get(id);
        this.shards.set(id, {
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
  private async readShard(state: ShardState): Promise<number> {
    const parent = state.shard.ParentShardId ? this.shards.get(state.shard.ParentShardId) : undefined;
    if (state.finished || (parent && !parent.finished)) return 0;
    if (!state.iterator) {
      const { ShardIterator } = await this.streams.send(
        new GetShardIteratorCommand({
          StreamArn: this.streamArn,
          ShardId: state.shard.ShardId,
          ...(state.position
            ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER', SequenceNumber: state.position }
            : { ShardIteratorType: 'TRIM_HORIZON' }),
        }),
      );
      state.iterator = ShardIterator;
    }
    const { Records = [], NextShardIterator } = await this.streams.send(
      new GetRecordsCommand({ ShardIterator: state.iterator, Limit: 1000 }),
    );
    if (Records.length > 0) await this.fanOutBatch(state, Records);
    state.iterator = NextShardIterator;
    if (!NextShardIterator) {
      state.finished = true;
      await this.checkpoint(state);
    }
    return Records.length;
  }

  /** A batch of a shard handed to the fan-out, then the shard's position moved past it. */
  private async fanOutBatch(state: ShardState, records: StreamsRecord[]): Promise<void> {
    const result = await fanOut(records.map(streamRecordOf));
    if (result.failed.length > 0) {
      // Read again from the last position fanned out: those records are handed over again.
      state.iterator = undefined;
      throw new Error(`the fan-out of ${result.failed.length} stream records failed`);
    }
    this.counts.records += records.length;
    this.counts.events += result.events;
    this.counts.deliveries += result.deliveries;
    state.position = records.at(-1)?.dynamodb?.SequenceNumber ?? state.position;
    // A batch without events needs no checkpoint now (reading it again costs nothing): so the checkpoint's own
    // write, which the stream carries too, does not call for another.
    if (result.events > 0) await this.checkpoint(state);
  }

  private async checkpoint(state: ShardState): Promise<void> {
    await saveCheckpoint(this.options.consumer, this.streamArn, state.shard.ShardId ?? '', {
      sequenceNumber: state.position,
      finished: state.finished,
    });
  }
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
