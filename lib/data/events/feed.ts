import { queryAll, tableName } from '../client.ts';
import { EVENT_SHARDS, eventKeys } from '../keys.ts';
import { placeOfEventId } from './ids.ts';
import { age, bodyOf, live, placeItems } from './item.ts';
import { closePlace, eventSettleMs, MAX_CLOSED_PER_READ } from './places.ts';
import type { EventRecord } from './shapes.ts';

/** Reading the feed in place order up to its first open place, and one event by id (the feed's design: ../events.ts). */

/** `after` names no event of this account (malformed, unknown, expired, another account's). */
export class UnknownEventCursor extends Error {
  constructor() {
    super('The cursor names no event of this account');
  }
}

export interface FeedQuery {
  /** The event id to read after (undefined: from the oldest kept). */
  after?: string | undefined;
  /** At most this many events are examined (served when they match). */
  limit: number;
  /** Which event types are served (examined events of other types are skipped). */
  matches: (type: string) => boolean;
}

export interface FeedPage {
  events: EventRecord[];
  /**
   * The cursor to read after next: the last event examined; when the page examined none but passed void places,
   * the last of those (a void's id names no event: reading after it goes on past the run, however long). Else
   * undefined: nothing after `after` is settled yet.
   */
  last: string | undefined;
}

interface Slot {
  seq: number;
  item: Record<string, unknown>;
  parts: Buffer[];
}

/**
 * One page of the feed: the events after `after`, in sequence order, up to `limit` examined and up to the first
 * open place (closed first when older than EVENT_SETTLE_MS). Reads O(limit) items: one Query (more only when
 * void places fill it or an event comes in parts).
 */
export async function readFeed(accountId: string, query: FeedQuery): Promise<FeedPage> {
  const afterSeq = query.after === undefined ? undefined : placeOfEventId(query.after);
  if (query.after !== undefined && afterSeq === undefined) throw new UnknownEventCursor();
  const events: EventRecord[] = [];
  let last: string | undefined;
  let examined = 0;
  let expected = afterSeq === undefined ? undefined : afterSeq + 1;
  let from = afterSeq ?? 0;
  for (let round = 0; round < 4 && examined < query.limit; round++) {
    // What the page still needs, +1: the cursor's own item, or a look past the last place read.
    const { slots, more } = await readSlots(accountId, from, query.limit - examined + 1);
    if (round === 0 && afterSeq !== undefined) {
      const cursor = slots.shift();
      if (!cursor || cursor.seq !== afterSeq || cursor.item.id !== query.after || !live(cursor.item)) {
        throw new UnknownEventCursor();
      }
    }
    if (round === 0 && expected === undefined && slots[0] && !(await headSettled(accountId, slots[0]))) break;
    if (slots.length === 0) break;
    let stop = false;
    for (const slot of slots) {
      // Open places before this one: closed when older than any living writer, else the page ends here.
      if (
        expected !== undefined &&
        slot.seq !== expected &&
        !(await closeOpenPlaces(accountId, expected, slot))
      ) {
        stop = true;
        break;
      }
      expected = slot.seq + 1;
      if (slot.item.type !== eventKeys.itemType.event || !live(slot.item)) {
        // Voids written before they carried an id cannot be a cursor: the next page reads them again.
        const cursorable = slot.item.type === eventKeys.itemType.void && live(slot.item);
        if (examined === 0 && cursorable && typeof slot.item.id === 'string') last = slot.item.id;
        continue;
      }
      const record = JSON.parse(Buffer.concat(slot.parts).toString('utf8')) as EventRecord;
      examined++;
      last = record.id;
      if (query.matches(record.type)) events.push(record);
      if (examined === query.limit) {
        stop = true;
        break;
      }
    }
    if (stop || !more) break;
    from = expected as number;
  }
  return { events, last };
}

/**
 * The feed read from its start begins at the oldest place kept. The places below it are expired (removed by
 * TTL) or were never written: a place taken before it whose writer may still be alive keeps the page waiting
 * until the oldest place is older than any living writer; then the places just below an event there are closed
 * (docs/data-model.md, "Events", says what this does not cover).
 */
async function headSettled(accountId: string, oldest: Slot): Promise<boolean> {
  if (oldest.seq <= 1) return true;
  if (age(oldest.item) < eventSettleMs()) return false;
  if (oldest.item.type !== eventKeys.itemType.event) return true;
  const below = Math.min(oldest.seq - 1, MAX_CLOSED_PER_READ);
  return closePlacesBelow(accountId, oldest.seq - below, below, oldest);
}

/**
 * Reads places from `from` on, in sequence order, parts joined: the account's partitions (its shards and the
 * legacy one) are read in one round, each for its share of `count` places (places go round the shards, so
 * `count` places from `from` are ~count / EVENT_SHARDS items a shard). Answers the places up to the first one a
 * partition's read may have cut off (every place up to there is read in full: a place missing there is open),
 * at least `count` of them when the feed has them (`more`: a partition has items beyond).
 */
async function readSlots(
  accountId: string,
  from: number,
  count: number,
): Promise<{ slots: Slot[]; more: boolean }> {
  const share = Math.ceil(count / EVENT_SHARDS) + 2;
  const reads = await Promise.all(
    eventKeys.partitions(accountId).map(async (pk, i) => {
      // The legacy partition holds every place (written before the feed was spread): a share of all of them.
      const limit = i === 0 ? count + 1 : share;
      const items = await queryAll(
        {
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
          ExpressionAttributeValues: { ':pk': pk, ':from': eventKeys.sort(from), ':to': SK_END },
          ConsistentRead: true,
        },
        limit,
      );
      return { items, cut: items.length >= limit };
    }),
  );
  // Every place below `bound` is read in full: a partition whose read was cut stops short of its last place.
  let bound = Number.POSITIVE_INFINITY;
  for (const { items, cut } of reads) {
    const last = items.at(-1);
    if (cut && last) bound = Math.min(bound, eventKeys.parse(String(last.sk)).seq);
  }
  const bySeq = new Map<number, Slot>();
  for (const { items } of reads) {
    const slots: Slot[] = [];
    for (const item of items) {
      const { seq, part } = eventKeys.parse(String(item.sk));
      if (seq >= bound) break;
      if (part === 0) slots.push({ seq, item, parts: [bodyOf(item)] });
      else if (slots.at(-1)?.seq === seq) slots.at(-1)?.parts.push(bodyOf(item));
    }
    for (const slot of slots) {
      // A place closed in one partition while its event landed in the other (data-model.md): the event.
      const held = bySeq.get(slot.seq);
      if (
        !held ||
        (held.item.type !== eventKeys.itemType.event && slot.item.type === eventKeys.itemType.event)
      ) {
        bySeq.set(slot.seq, slot);
      }
    }
  }
  const slots = [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  // An event whose parts the read cut off: its other parts (a large ticket's event is 2 parts at most).
  const tail = slots.at(-1);
  if (tail && Number(tail.item.parts ?? 1) > tail.parts.length) {
    tail.parts = (await placeItems(accountId, tail.seq)).map(bodyOf);
  }
  // No partition cut: the feed ends here for now (no further read this page).
  return { slots, more: bound !== Number.POSITIVE_INFINITY };
}

/** Past every place's sort key (and its parts'). */
const SK_END = '~';

/** Closes the open places from `expected` up to `next`'s, when `next` is older than any living writer. */
async function closeOpenPlaces(accountId: string, expected: number, next: Slot): Promise<boolean> {
  if (age(next.item) < eventSettleMs()) return false;
  const open = Math.min(next.seq - expected, MAX_CLOSED_PER_READ);
  const closed = await closePlacesBelow(accountId, expected, open, next);
  // More open places than one read closes, or one that turned out to hold an event: the next read goes on.
  return closed && open === next.seq - expected;
}

/** One event by id, or undefined (unknown, expired, another account's). One Query: the event and its parts. */
export async function getEvent(accountId: string, id: string): Promise<EventRecord | undefined> {
  const body = await getEventBody(accountId, id);
  return body ? (JSON.parse(body.toString('utf8')) as EventRecord) : undefined;
}

/**
 * One event's JSON text as stored (what reading one event answers, and what a webhook delivery sends), or
 * undefined as getEvent. One Query: the event and its parts.
 */
export async function getEventBody(accountId: string, id: string): Promise<Buffer | undefined> {
  const seq = placeOfEventId(id);
  if (seq === undefined) return undefined;
  const [head, ...parts] = await placeItems(accountId, seq);
  if (!head || head.type !== eventKeys.itemType.event || head.id !== id || !live(head)) return undefined;
  return Buffer.concat([head, ...parts].map(bodyOf));
}

/**
 * Closes `count` places from `first` on, all below `above`: their voids carry its time (no place below it was
 * taken after it), so they never look younger than the places they close. True when every one is now void.
 */
async function closePlacesBelow(
  accountId: string,
  first: number,
  count: number,
  above: Slot,
): Promise<boolean> {
  const at = Number(above.item.at);
  const seqs = Array.from({ length: count }, (_, i) => first + i);
  return (await Promise.all(seqs.map((seq) => closePlace(accountId, seq, at)))).every(Boolean);
}
