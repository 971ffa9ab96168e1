import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from '../client.ts';
import { eventKeys } from '../keys.ts';
import { live } from './item.ts';
import { eventSettleMs } from './places.ts';

/** What the webhook dispatcher reads of the feed: event items' summaries, and the events since a time (the feed's design: ../events.ts). */

/** What an event item says of its event without its body. */
export interface EventSummary {
  id: string;
  type: string;
  /** Epoch ms of the place's taking (its created_at, to the millisecond). */
  at: number;
}

/** An event item (a stream record's image, or a read item) summarised, or undefined for any other item. */
export function eventSummaryOf(item: Record<string, unknown>): EventSummary | undefined {
  if (
    item.type !== eventKeys.itemType.event ||
    typeof item.id !== 'string' ||
    typeof item.event_type !== 'string'
  )
    return undefined;
  return { id: item.id, type: item.event_type, at: Number(item.at) };
}

/** The account an event item's partition key names (the stream hands the fan-out bare items). */
export const accountOfEventItem = (item: Record<string, unknown>): string | undefined =>
  eventKeys.accountOf(String(item.pk));

/**
 * The account's kept events created at or after `since` (epoch ms), oldest first, at most `limit` (`more`: there
 * are later ones). Places are taken in sequence order, each at most a settle window (eventSettleMs) before its
 * commit, so the place times rise with the sequence give or take that window: a binary search over the places
 * (one single-item Query a step, ~log2 of the kept places) finds where to start, then the events are read forward
 * from there, O(limit) items. Reads the events' items (not their parts).
 */
export async function eventsSince(
  accountId: string,
  since: number,
  limit: number,
): Promise<{ events: EventSummary[]; more: boolean }> {
  const startBelow = since - eventSettleMs();
  const first = await placeAtOrAfter(accountId, 0, 'forward');
  const last = await placeAtOrAfter(accountId, Number.MAX_SAFE_INTEGER, 'backward');
  if (!first || !last) return { events: [], more: false };
  // The lowest place whose item is not older than startBelow (every place below it is).
  let [low, high] = [first.seq, last.seq + 1];
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    const slot = await placeAtOrAfter(accountId, mid, 'forward');
    if (!slot || Number(slot.item.at) >= startBelow) high = mid;
    else low = slot.seq + 1;
  }
  const events: EventSummary[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND sk >= :from',
        ExpressionAttributeValues: {
          ':pk': eventKeys.feedPartition(accountId),
          ':from': eventKeys.sort(low),
        },
        ProjectionExpression: SUMMARY_PROJECTION,
        ExpressionAttributeNames: { '#type': 'type', '#at': 'at' },
        Limit: Math.min(500, limit + 1 - events.length + 10),
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const event = eventSummaryOf(item);
      if (!event || !live(item) || event.at < since) continue;
      if (events.length === limit) return { events, more: true };
      events.push(event);
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return { events, more: false };
}

const SUMMARY_PROJECTION = 'pk, sk, #type, id, event_type, #at, expires_at';

/** The first place item at or after `seq` (forward), or at or before it (backward); parts are skipped. */
async function placeAtOrAfter(
  accountId: string,
  seq: number,
  direction: 'forward' | 'backward',
): Promise<{ seq: number; item: Record<string, unknown> } | undefined> {
  const forward = direction === 'forward';
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: forward ? 'pk = :pk AND sk >= :seq' : 'pk = :pk AND sk <= :seq',
      ExpressionAttributeValues: {
        ':pk': eventKeys.feedPartition(accountId),
        ':seq': forward ? eventKeys.sort(seq) : `${eventKeys.sort(Math.min(seq, 99_999_999_999_999))}~`,
      },
      ProjectionExpression: SUMMARY_PROJECTION,
      ExpressionAttributeNames: { '#type': 'type', '#at': 'at' },
      ScanIndexForward: forward,
      // A large event's part may come first (backward, or forward from inside a place): one more item passes it.
      Limit: 3,
    }),
  );
  const item = (Items ?? []).find((i) => eventKeys.parse(String(i.sk)).part === 0);
  return item ? { seq: eventKeys.parse(String(item.sk)).seq, item } : undefined;
}
