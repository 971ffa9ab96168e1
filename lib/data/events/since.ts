import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { eventKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { eventSettleMs } from './close.ts';
import { live } from './item.ts';

/** What the webhook dispatcher reads of the feed: event items' summaries, and the events since a time (the feed's design: ../events.ts). */

/** What an event item says of its event without its body. */
export interface EventSummary {
  id: string;
  type: string;
  /** Epoch ms of the place's taking (its created_at, to the millisecond). */
  at: number;
  /** An import's change (its `import_id`): webhooks receive none of these. */
  imported?: true;
}

/** An event item (a stream record's image, or a read item) summarised, or undefined for any other item. */
export function eventSummaryOf(item: Record<string, unknown>): EventSummary | undefined {
  if (
    item.type !== eventKeys.itemType.event ||
    typeof item.id !== 'string' ||
    typeof item.event_type !== 'string'
  )
    return undefined;
  return {
    id: item.id,
    type: item.event_type,
    at: Number(item.at),
    ...(item.import_id === undefined ? {} : { imported: true as const }),
  };
}

/** The account an event item's partition key names (the stream hands the fan-out bare items). */
export const accountOfEventItem = (item: Record<string, unknown>): string | undefined =>
  eventKeys.accountOf(String(item.pk));

/**
 * The account's kept events created at or after `since` (epoch ms), oldest first, at most `limit` (`more`: there
 * are later ones). Within one partition, places are taken in order (its shard counter's), each at most a settle
 * window (eventSettleMs) before its commit, so a partition's place times rise with its places give or take that
 * window; across partitions they do not (a shard that few objects write lags). So each partition is searched on
 * its own (a binary search, its steps for all partitions in one round of single-item Queries, ~log2 of its
 * places), then the events are read forward from there, a round of the partitions at a time, merged in place
 * order, O(limit) items.
 * Reads the events' items (not their parts).
 */
export async function eventsSince(
  accountId: string,
  since: number,
  limit: number,
): Promise<{ events: EventSummary[]; more: boolean }> {
  const startBelow = since - eventSettleMs();
  const partitions = eventKeys.partitions(accountId);
  const starts = await Promise.all(partitions.map((pk) => firstPlaceSince(pk, startBelow)));
  const froms = starts.map((start) => start ?? Number.POSITIVE_INFINITY);
  const events: EventSummary[] = [];
  for (;;) {
    // A round: each partition from where it stands; every place below the first cut partition's last is read in full.
    const reads = await Promise.all(
      partitions.map(async (pk, i) => {
        const from = froms[i] as number;
        if (!Number.isFinite(from)) return { items: [], cut: false };
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
    for (const [i, from] of froms.entries()) froms[i] = Math.max(from, bound);
  }
}

/**
 * The lowest place of partition `pk` whose item is not older than `startBelow` (every place of the partition
 * below it is), or undefined when none is.
 */
export async function firstPlaceSince(pk: string, startBelow: number): Promise<number | undefined> {
  const [first, last] = await Promise.all([
    placeAtOrAfter(pk, 0, 'forward'),
    placeAtOrAfter(pk, Number.MAX_SAFE_INTEGER, 'backward'),
  ]);
  if (!first || !last) return undefined;
  if (Number(last.item.at) < startBelow) return undefined;
  if (Number(first.item.at) >= startBelow) return first.seq;
  let [low, high] = [first.seq, last.seq + 1];
  while (low < high) {
    const mid = Math.floor((low + high) / 2);
    const slot = await placeAtOrAfter(pk, mid, 'forward');
    if (!slot || Number(slot.item.at) >= startBelow) high = mid;
    else low = slot.seq + 1;
  }
  return low;
}

/** Items one partition's read of a round of eventsSince takes. */
const SINCE_ROUND_ITEMS = 100;

const SUMMARY_PROJECTION = 'pk, sk, #type, id, event_type, #at, expires_at';

/**
 * The first place item of partition `pk` at or after `seq` (forward), or at or before it (backward); parts are
 * skipped.
 */
async function placeAtOrAfter(
  pk: string,
  seq: number,
  direction: 'forward' | 'backward',
): Promise<{ seq: number; item: Record<string, unknown> } | undefined> {
  const forward = direction === 'forward';
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
}
