import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { webhookDeliveryKeys } from '../keys.ts';
import { dynamo, queryAll, tableName } from '../store/client.ts';

/**
 * Where `npm start`'s stream reader is in each shard of the table's stream (infra/local/stream-reader.ts): the
 * last sequence number whose records were fanned out, and whether the shard was read to its end. A restart resumes
 * after it. Kept 2 days (a stream keeps records 24 hours; a checkpoint of a shard gone is of no use).
 */
export interface Checkpoint {
  sequenceNumber: string | undefined;
  /** The shard is closed and every record of it was fanned out. */
  finished: boolean;
}

const CHECKPOINT_RETENTION_SECONDS = 2 * 24 * 60 * 60;

/** Every checkpoint of a consumer on a stream, by shard id. */
export async function readCheckpoints(consumer: string, streamArn: string): Promise<Map<string, Checkpoint>> {
  const { pk } = webhookDeliveryKeys.streamCheckpoint(consumer, streamArn, '');
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ConsistentRead: true,
  });
  return new Map(
    items.map((item) => [
      String(item.sk),
      {
        sequenceNumber: item.sequenceNumber === undefined ? undefined : String(item.sequenceNumber),
        finished: item.finished === true,
      },
    ]),
  );
}

export async function saveCheckpoint(
  consumer: string,
  streamArn: string,
  shardId: string,
  checkpoint: Checkpoint,
): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...webhookDeliveryKeys.streamCheckpoint(consumer, streamArn, shardId),
        type: 'stream_checkpoint',
        sequenceNumber: checkpoint.sequenceNumber,
        finished: checkpoint.finished,
        expires_at: Math.floor(nowMillis() / 1000) + CHECKPOINT_RETENTION_SECONDS,
      },
    }),
  );
}
