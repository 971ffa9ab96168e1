import { nowMillis } from '#lib/time.ts';
import { EVENT_SHARDS, eventKeys } from '../keys/events.ts';
import { queryAll, tableName } from '../store/client.ts';
import { bodyOf, EVENT_RETENTION_SECONDS, placeItems } from './item.ts';

/** The places a feed page reads (./feed.ts), as slots: what one round of Queries finds, parts joined. */

export interface Slot {
  seq: number;
  item: Record<string, unknown>;
  parts: Buffer[];
  /** A range void's first place (it voids its lane's places from there to `seq`). */
  lo?: number;
  /** Known to this page only (a void it wrote, another reader's range it learnt of): no cursor names it. */
  synthetic?: boolean;
}

/** One round's read: its slots, the place below which every place is read in full, and whether there is more. */
export interface SlotsRead {
  slots: Slot[];
  bound: number;
  more: boolean;
}

/** A void this page wrote (closing a place), known to it only. */
export const voidSlot = (seq: number, at: number): Slot => ({
  seq,
  item: { type: eventKeys.itemType.void, at, expires_at: Number.MAX_SAFE_INTEGER },
  parts: [],
  synthetic: true,
});

/** A range void a bump wrote (`id`: this page's own, which a cursor may name) or learnt of. */
export const rangeSlot = (from: number, to: number, id?: string): Slot => ({
  seq: to,
  lo: from,
  item: {
    type: eventKeys.itemType.void,
    at: nowMillis(),
    expires_at: Math.floor(nowMillis() / 1000) + EVENT_RETENTION_SECONDS,
    ...(id ? { id } : {}),
  },
  parts: [],
  synthetic: id === undefined,
});

/** A shard partition's items read from one place on. */
interface PartitionRead {
  items: Record<string, unknown>[];
  /** The read stopped at its share: the partition may have items beyond. */
  cut: boolean;
}

/**
 * Reads places from `from` on, in place order, parts joined: the account's shard partitions are read in one
 * round, each for its share of `count` places (~count / EVENT_SHARDS items a shard, with room for the unevenness
 * of objects' shards and for range voids). Answers the places up to the first one a partition's read may have cut
 * off (`bound`: every place below it is read in full), at least `count` of them when the feed has them (`more`: a
 * partition has items beyond).
 */
export async function readSlots(accountId: string, from: number, count: number): Promise<SlotsRead> {
  const share = Math.ceil((count * 5) / 4 / EVENT_SHARDS) + 3;
  const reads = await Promise.all(
    eventKeys.partitions(accountId).map((pk) => readPartition(pk, from, share)),
  );
  const bound = boundOf(reads);
  const slots = slotsBelow(reads, bound);
  await joinCutTail(accountId, slots);
  return { slots, bound, more: bound !== Number.POSITIVE_INFINITY };
}

async function readPartition(pk: string, from: number, share: number): Promise<PartitionRead> {
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': pk, ':from': eventKeys.sort(from), ':to': SK_END },
      ConsistentRead: true,
    },
    share,
  );
  return { items, cut: items.length >= share };
}

/**
 * Every place below `bound` is read in full: a partition whose read was cut may stop inside its last place's
 * parts (a place with no parts is read whole).
 */
function boundOf(reads: PartitionRead[]): number {
  let bound = Number.POSITIVE_INFINITY;
  for (const { items, cut } of reads) {
    const last = items.at(-1);
    if (!cut || !last) continue;
    const { seq, part } = eventKeys.parse(String(last.sk));
    const whole = part === 0 && last.parts === undefined;
    bound = Math.min(bound, whole ? seq + 1 : seq);
  }
  return bound;
}

/** The slots of the places below `bound`, in place order (and the range voids that reach below it). */
function slotsBelow(reads: PartitionRead[], bound: number): Slot[] {
  const slots: Slot[] = [];
  for (const { items } of reads) {
    // A place's items are all in its partition: its parts follow it.
    for (const item of items) {
      const { seq, part } = eventKeys.parse(String(item.sk));
      // A range void is read whole (it has no parts): past the bound it still says which places below it are void.
      if (item.from !== undefined) {
        if (Number(item.from) < bound) slots.push({ seq, item, parts: [], lo: Number(item.from) });
        continue;
      }
      if (seq >= bound) continue;
      if (part === 0) slots.push({ seq, item, parts: [bodyOf(item)] });
      else if (slots.at(-1)?.seq === seq) slots.at(-1)?.parts.push(bodyOf(item));
    }
  }
  slots.sort((a, b) => a.seq - b.seq);
  return slots;
}

/** An event whose parts the read cut off: its other parts (a large ticket's event is 2 parts at most). */
async function joinCutTail(accountId: string, slots: Slot[]): Promise<void> {
  const tail = slots.at(-1);
  if (
    tail &&
    tail.item.type === eventKeys.itemType.event &&
    Number(tail.item.parts ?? 1) > tail.parts.length
  ) {
    tail.parts = (await placeItems(accountId, tail.seq)).map(bodyOf);
  }
}

/** Past every place's sort key (and its parts'). */
const SK_END = '~';
