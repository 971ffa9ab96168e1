import { nowMillis } from '#lib/time.ts';
import { queryAll, tableName } from '../client.ts';
import { eventKeys } from '../keys.ts';

/** A place's items as stored (the feed's design: ../events.ts): their types, sizes, retention, and their reads. */

/** Events are kept 30 days (DynamoDB TTL on `expires_at`; reads skip expired items TTL has not removed yet). */
export const EVENT_RETENTION_SECONDS = 30 * 24 * 60 * 60;

/** DynamoDB holds 400 KB an item: an event's JSON text is stored in parts of at most this many bytes. */
export const PART_BYTES = 350_000;
/** The commit actions one event may take (its item, and one part: a ticket's event is under 700 KB). */
export const MAX_EVENT_ACTIONS = 2;

/**
 * An item not yet past `expires_at` (TTL removes expired items days later). An item with none is kept for good.
 */
export const live = (item: Record<string, unknown>) =>
  item.expires_at === undefined || Number(item.expires_at) > nowMillis() / 1000;
/** How long ago the item's place was taken (or its void written for it). */
export const age = (item: Record<string, unknown>) => nowMillis() - Number(item.at);

/** An event item's (or part's) bytes of the event's JSON text. */
export const bodyOf = (item: Record<string, unknown>) =>
  item.body instanceof Uint8Array ? Buffer.from(item.body) : Buffer.alloc(0);

/**
 * A place's items: the event (or void) and its parts, in order. One Query of its shard's partition.
 */
export function placeItems(accountId: string, seq: number): Promise<Record<string, unknown>[]> {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :place)',
    ExpressionAttributeValues: {
      ':pk': eventKeys.partitionOf(accountId, seq),
      ':place': eventKeys.sort(seq),
    },
    ConsistentRead: true,
  });
}
