import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { workerHandler } from '#lib/log.ts';
import { fanOut } from '#lib/webhooks/fan-out.ts';

/**
 * The table's stream → webhook deliveries (docs/webhooks.md): a batch of the event source mapping (filtered to
 * event items' INSERTs) fanned out. Records whose fan-out failed are reported back (ReportBatchItemFailures):
 * Lambda hands them over again, from the first failed, and the fan-out creates nothing twice.
 */
export const handler = workerHandler('webhooks fan-out', async (event: DynamoDBStreamEvent) => {
  const result = await fanOut(
    event.Records.map((record) => ({
      eventName: record.eventName,
      sequenceNumber: record.dynamodb?.SequenceNumber ?? '',
      newImage: record.dynamodb?.NewImage
        ? unmarshall(record.dynamodb.NewImage as Parameters<typeof unmarshall>[0])
        : undefined,
    })),
  );
  const answer: DynamoDBBatchResponse = {
    batchItemFailures: result.failed.map((itemIdentifier) => ({ itemIdentifier })),
  };
  const figures = {
    records: event.Records.length,
    events: result.events,
    deliveries: result.deliveries,
    failed: result.failed.length,
  };
  return { answer, figures };
});
