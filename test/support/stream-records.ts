import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { placeOfEventId } from '#lib/data/events.ts';
import { eventKeys } from '#lib/data/keys.ts';
import { getItem } from '#lib/data/store/client.ts';

/**
 * Factories for the DynamoDB stream records the webhooks-stream function is handed, so a test reads as the batch
 * it hands over: `streamBatch(inserted(event, '100'), modified(event, '101'))`.
 */

/** A stream record of an item as Lambda hands it over: its image in DynamoDB JSON, binary values in base64. */
export function streamRecord(
  item: Record<string, unknown>,
  eventName: 'INSERT' | 'MODIFY',
  sequence: string,
): DynamoDBRecord {
  // Lambda's event is JSON: a binary attribute arrives as its base64 text, not as the bytes marshall gives.
  const image = JSON.parse(
    JSON.stringify(marshall(item), (_key, value) =>
      value instanceof Uint8Array || value?.type === 'Buffer'
        ? Buffer.from(value.data ?? value).toString('base64')
        : value,
    ),
  );
  return {
    eventID: sequence,
    eventName,
    eventSource: 'aws:dynamodb',
    dynamodb: {
      Keys: { pk: { S: String(item.pk) }, sk: { S: String(item.sk) } },
      NewImage: image,
      SequenceNumber: sequence,
      StreamViewType: 'NEW_IMAGE',
    },
  };
}

/** The record of an item written for the first time. */
export const inserted = (item: Record<string, unknown>, sequence: string) =>
  streamRecord(item, 'INSERT', sequence);

/** The record of a change to an item already there. */
export const modified = (item: Record<string, unknown>, sequence: string) =>
  streamRecord(item, 'MODIFY', sequence);

/** A batch as an event source mapping hands it over. */
export const streamBatch = (...records: DynamoDBRecord[]): DynamoDBStreamEvent => ({ Records: records });

/** The stored item of an event (what its stream record carries), read from the table. */
export async function storedEventItem(accountId: string, eventId: string): Promise<Record<string, unknown>> {
  const item = await getItem(eventKeys.place(accountId, placeOfEventId(eventId) ?? 0));
  if (!item) throw new Error(`no stored item for event ${eventId}`);
  return item;
}
