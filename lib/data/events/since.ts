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
 * (one round of single-item Queries of the account's partitions a step, ~log2 of the kept places) finds where to
 * start, then the events are read forward from there, a round of the partitions at a time, O(limit) items. Reads the events' items (not their parts).
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
  let from = low;
  for (;;) {
    // A round: each partition from `from` on; every place below the first cut partition's last is read in full.
    const reads = await Promise.all(
      eventKeys.partitions(accountId).map(async (pk) => {
        const page = await dynamo.send(
          new QueryCommand({
            TableName: tableName(),
            KeyConditionExpression: 'pk = :pk AND sk >= :from',
            ExpressionAttributeValues: { ':pk': pk, ':from': eventKeys.sort(from) },
            ProjectionExpression: SUMMARY_PROJECTION,
            ExpressionAttributeNames: { '#type': 'type', '#at': 'at' },
            Limit: SINCE_ROUND_ITEMS,
          }),
        );
        return { items: page.Items ?? [], cut: page.LastEvaluatedKey !== undefined };
      }),
    );
    let bound = Number.POSITIVE_INFINITY;
    for (const { items, cut } of reads) {
      const last = items.at(-1);
      if (cut && last) bound = Math.min(bound, eventKeys.parse(String(last.sk)).seq + 1);
    }
    const found = reads
      .flatMap((r) => r.items)
      .map((item) => ({ seq: eventKeys.parse(String(item.sk)).seq, item }))
      .filter(({ seq }) => seq < bound)
      .sort((a, b) => a.seq - b.seq);
    for (const { item } of found) {
      const event = eventSummaryOf(item);
      if (!event || !live(item) || event.at < since) continue;
      if (events.length === limit) return { events, more: true };
      events.push(event);
    }
    if (bound === Number.POSITIVE_INFINITY) return { events, more: false };
    from = bound;
  }
}

/** Items one partition's read of a round of eventsSince takes. */
const SINCE_ROUND_ITEMS = 100;

const SUMMARY_PROJECTION = 'pk, sk, #type, id, event_type, #at, expires_at';

/**
 * The first place item at or after `seq` (forward), or at or before it (backward), in any of the account's
 * partitions (read in one round); parts are skipped.
 */
async function placeAtOrAfter(
  accountId: string,
  seq: number,
  direction: 'forward' | 'backward',
): Promise<{ seq: number; item: Record<string, unknown> } | undefined> {
  const forward = direction === 'forward';
  const found = await Promise.all(
    eventKeys.partitions(accountId).map(async (pk) => {
      const { Items } = await dynamo.send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: forward ? 'pk = :pk AND sk >= :seq' : 'pk = :pk AND sk <= :seq',
          ExpressionAttributeValues: {
            ':pk': pk,
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
    }),
  );
  const places = found.filter((f) => f !== undefined).sort((a, b) => a.seq - b.seq);
  return forward ? places[0] : places.at(-1);
}
