import { ServiceUnavailable } from '#lib/errors.ts';
import { timeLeftMs } from '#lib/request-scope.ts';
import { nowMillis } from '#lib/time.ts';
import { queryAll, tableName } from '../client.ts';
import { EVENT_SHARDS, eventKeys } from '../keys.ts';
import { placeOfEventId } from './ids.ts';
import { age, bodyOf, EVENT_RETENTION_SECONDS, live, placeItems } from './item.ts';
import {
  bumpLane,
  bumpTarget,
  LANES,
  laneAtOrAfter,
  laneOf,
  type PendingWrites,
  placeOf,
  SETTLE_RESERVE_MS,
} from './lanes.ts';
import { closePlace, eventSettleMs, MAX_CLOSED_PER_READ } from './places.ts';
import type { EventRecord } from './shapes.ts';

/** Reading the feed in place order up to its first place not settled, and one event by id (the feed's design: ../events.ts). */

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
  /** A range void's first place (it voids its lane's places from there to `seq`). */
  lo?: number;
  /** Known to this page only (a void it wrote, another reader's range it learnt of): no cursor names it. */
  synthetic?: boolean;
}

/** Rounds of reads one page makes at most. */
const MAX_ROUNDS = 4;
/** Times one page settles missing places (bumps lagging lanes, closes old open places): each 1–2 round trips. */
const MAX_SETTLES = 2;

/**
 * One page of the feed: the events after `after`, in place order, up to `limit` examined and up to the first
 * place that is not settled. A place is settled when an event or a void holds it, or a range void covers it. A
 * missing place below a place the page would serve is settled on the way: when its lane never handed it out, the
 * lane's counter is moved past it (a bump, with the range void of what it skips); when a writer holds it, it is
 * closed once older than any living writer (EVENT_SETTLE_MS), else the page ends before it. Reads O(limit) items:
 * one round of Queries (more when voids fill it or an event comes in parts); a page that must settle places adds
 * one round trip of bumps and closes (two when a bump finds a place a writer holds that is old enough to close).
 */
export async function readFeed(accountId: string, query: FeedQuery): Promise<FeedPage> {
  const afterSeq = query.after === undefined ? undefined : placeOfEventId(query.after);
  if (query.after !== undefined && afterSeq === undefined) throw new UnknownEventCursor();
  const events: EventRecord[] = [];
  let last: string | undefined;
  let examined = 0;
  // Every place below `from` is settled (and passed); from the start, each lane begins at its oldest kept place.
  let from = afterSeq === undefined ? 0 : afterSeq + 1;
  const fromStart = afterSeq === undefined;
  let settles = 0;
  // Range voids of this page's bumps being written (their counters say so already): awaited before it answers.
  const pending: PendingWrites = [];
  for (let round = 0; round < MAX_ROUNDS && examined < query.limit; round++) {
    // What the page still needs, +1: the cursor's own item, or a look past the last place read.
    const read = await readSlots(
      accountId,
      round === 0 && afterSeq !== undefined ? afterSeq : from,
      query.limit - examined + 1,
    );
    if (round === 0 && afterSeq !== undefined) {
      const at = read.slots.findIndex((s) => s.seq === afterSeq);
      const cursor = read.slots[at];
      if (!cursor || cursor.item.id !== query.after || !live(cursor.item)) throw new UnknownEventCursor();
      read.slots.splice(at, 1);
    }
    const slots = read.slots.filter((s) => s.seq >= from);
    const starts = fromStart ? headStarts(slots, from) : new Map<number, number>();
    let lanes = laneStates(slots, from, starts);
    const target = pageTarget(slots, read);
    if (
      target !== undefined &&
      settles < MAX_SETTLES &&
      timeLeftMs() > SETTLE_RESERVE_MS &&
      [...lanes.values()].some((l) => l.gap < target)
    ) {
      settles++;
      // A store too slow or busy for the settling writes (past their retries, or the deadline near): the page
      // serves what is settled already, and the next page settles the rest.
      const found = await settleLanes(accountId, lanes, target, starts, pending).catch((error: unknown) => {
        if (error instanceof ServiceUnavailable) return [];
        throw error;
      });
      slots.push(...found);
      slots.sort((a, b) => a.seq - b.seq);
      lanes = laneStates(slots, from, starts);
    }
    const settledBelow = Math.min(read.bound, ...[...lanes.values()].map((l) => l.gap));
    let stop = false;
    for (const slot of slots) {
      if (slot.seq >= settledBelow) break;
      if (slot.item.type !== eventKeys.itemType.event || !live(slot.item)) {
        // Voids written before they carried an id cannot be a cursor: the next page reads them again.
        const cursorable = slot.item.type === eventKeys.itemType.void && live(slot.item) && !slot.synthetic;
        if (examined === 0 && cursorable && typeof slot.item.id === 'string') last = slot.item.id;
        continue;
      }
      const record = JSON.parse(Buffer.concat(slot.parts).toString('utf8')) as EventRecord;
      examined++;
      last = record.id;
      from = slot.seq + 1;
      if (query.matches(record.type)) events.push(record);
      if (examined === query.limit) {
        stop = true;
        break;
      }
    }
    // The next round reads on from the first place not settled (or not read): a gap this page could not settle
    // ends it there.
    if (stop || settledBelow < read.bound || !read.more) break;
    from = Math.max(from, settledBelow);
  }
  // A range write that failed fails the page when its cursor names that range (no item would answer for it);
  // else the page stands (the counter holds the range, and a later reader closes those places once old enough).
  const failed = (await Promise.all(pending)).find((f) => f !== undefined && f.id === last);
  if (failed) throw failed.error;
  return { events, last };
}

/** What a lane looks like from the places read: its first missing place, and its slots above it. */
interface LaneState {
  lane: number;
  /** The lane's first place at or after `from` that no slot holds or covers. */
  gap: number;
  /** The lane's slots above the gap (so the gap was handed out: a writer holds it, or held it). */
  above: Slot[];
  /** The page read from the start and found nothing of the lane. */
  empty: boolean;
}

function laneStates(slots: Slot[], from: number, starts: Map<number, number>): Map<number, LaneState> {
  const states = new Map<number, LaneState>();
  for (const lane of LANES) {
    let gap = starts.get(lane) ?? laneAtOrAfter(lane, from);
    const mine = slots.filter((s) => laneOf(s.seq) === lane);
    let i = 0;
    for (; i < mine.length; i++) {
      const slot = mine[i] as Slot;
      if (slot.seq < gap) continue;
      if ((slot.lo ?? slot.seq) > gap) break;
      gap = slot.seq + EVENT_SHARDS;
    }
    states.set(lane, { lane, gap, above: mine.slice(i), empty: starts.has(lane) && mine.length === 0 });
  }
  return states;
}

/**
 * The feed read from its start: where each lane begins. A lane's places below its oldest kept one were handed out
 * before it (a lane's counter only rises): they are expired or were never written. Until that place is older than
 * any living writer the lane begins just below it (a missing place the page cannot pass); then at the 25 places
 * below it (closed by settleLanes, as open places with an old place above: a commit still in flight among them
 * then fails), or at it when it is a closer's void or its lane's first. A lane with nothing kept begins at its first place
 * (settleLanes finds out more).
 */
function headStarts(slots: Slot[], from: number): Map<number, number> {
  const starts = new Map<number, number>();
  for (const lane of LANES) {
    const first = laneAtOrAfter(lane, 0);
    // Only while nothing of the lane was passed (a later round of the same page reads on from its start).
    if (from > first) continue;
    const oldest = slots.find((s) => laneOf(s.seq) === lane);
    if (!oldest) {
      starts.set(lane, first);
      continue;
    }
    const lo = oldest.lo ?? oldest.seq;
    // A void (no range) at the head was written by a closer: the places below it were closed or are older.
    if (lo <= first || (oldest.item.type !== eventKeys.itemType.event && oldest.lo === undefined)) {
      starts.set(lane, lo);
    } else if (age(oldest.item) < eventSettleMs()) starts.set(lane, lo - EVENT_SHARDS);
    // Old enough: the places just below it are closed first (settleLanes), so that a commit of one of them
    // still in flight fails instead of landing below an event served.
    else starts.set(lane, Math.max(first, lo - MAX_CLOSED_PER_READ * EVENT_SHARDS));
  }
  return starts;
}

/**
 * The last place read (an event or a void, not a range: ranges are readers' own) that the page would serve or
 * pass: the lanes' missing places below it are worth settling. Undefined: nothing to pass (the feed's end).
 */
function pageTarget(slots: Slot[], read: { bound: number; more: boolean }): number | undefined {
  const passable = slots.filter((s) => s.lo === undefined && s.seq < read.bound);
  const last = passable.at(-1)?.seq;
  // A read cut short by ranges alone: what it reached.
  if (last === undefined && read.more && Number.isFinite(read.bound)) return read.bound - 1;
  return last;
}

/**
 * Settles the lanes' missing places below `target`, one round trip (two when a bump finds an old open place):
 * a lane with slots above its missing place handed it out, so the place is closed when a slot above it (or the
 * lane's last take) is older than any living writer; a lane with nothing above it is bumped past `target` (to
 * now's tick when later: bumpTarget, so that it does not lag again at once). Answers the slots this makes known
 * (voids it wrote, ranges of bumps).
 */
async function settleLanes(
  accountId: string,
  lanes: Map<number, LaneState>,
  target: number,
  starts: Map<number, number>,
  pending: PendingWrites,
): Promise<Slot[]> {
  const found: Slot[] = [];
  const window = eventSettleMs();
  let budget = MAX_CLOSED_PER_READ;
  const closing = async (gap: number, upTo: number, at: number) => {
    const seqs: number[] = [];
    for (let seq = gap; seq <= upTo && budget > 0; seq += EVENT_SHARDS, budget--) seqs.push(seq);
    const closed = await Promise.all(
      seqs.map(async (seq) => {
        const done = await closePlace(accountId, seq, at);
        if (done) found.push(voidSlot(seq, at));
        return done;
      }),
    );
    // Every place from the gap up to `upTo` is closed now.
    return closed.every(Boolean) && (seqs.at(-1) ?? upTo) >= upTo;
  };
  const bumpTo = (lane: number) => bumpTarget(lane, target);
  const later: { lane: number; gap: number; last: number; at: number; empty: boolean }[] = [];
  await Promise.all(
    [...lanes.values()]
      .filter((l) => l.gap < target)
      .map(async ({ lane, gap, above, empty }) => {
        if (above.length > 0) {
          const old = above.find((s) => !s.synthetic && age(s.item) >= window);
          if (old) await closing(gap, (above[0]?.lo ?? above[0]?.seq ?? gap) - 1, Number(old.item.at));
          return;
        }
        const outcome = await bumpLane(accountId, lane, gap, bumpTo(lane), pending);
        if (outcome.kind === 'covered') found.push(rangeSlot(outcome.from, outcome.to, outcome.id));
        else if (outcome.kind === 'handed') later.push({ lane, gap, ...outcome, empty });
      }),
  );
  // Places a writer was handed with nothing after them: closed once the lane's last take is older than any
  // living writer; a lane the page found nothing of (from the start) begins after that take instead.
  await Promise.all(
    later
      .filter((l) => nowMillis() - l.at >= window)
      .map(async ({ lane, gap, last, at, empty }) => {
        const next = placeOf(lane, last + 1);
        // A lane the page found nothing of, from the start: its places were handed out long ago (expired) but
        // the last 25, which are closed as any old open place (a commit still in flight among them then fails),
        // and it begins after them.
        const from = empty ? Math.max(gap, placeOf(lane, last - MAX_CLOSED_PER_READ + 1)) : gap;
        // Not all closed (the budget, or an event landed): the page ends there.
        if (!(await closing(from, placeOf(lane, last), at))) return;
        if (empty) starts.set(lane, next);
        // The lane's places after its last take were never handed out: bumped as any lagging lane.
        if (next >= target) return;
        const outcome = await bumpLane(accountId, lane, next, bumpTo(lane), pending);
        if (outcome.kind === 'covered') found.push(rangeSlot(outcome.from, outcome.to, outcome.id));
      }),
  );
  return found;
}

const voidSlot = (seq: number, at: number): Slot => ({
  seq,
  item: { type: eventKeys.itemType.void, at, expires_at: Number.MAX_SAFE_INTEGER },
  parts: [],
  synthetic: true,
});

/** A range void a bump wrote (`id`: this page's own, which a cursor may name) or learnt of. */
const rangeSlot = (from: number, to: number, id?: string): Slot => ({
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

/**
 * Reads places from `from` on, in place order, parts joined: the account's shard partitions are read in one
 * round, each for its share of `count` places (~count / EVENT_SHARDS items a shard, with room for the unevenness
 * of objects' shards and for range voids). Answers the places up to the first one a partition's read may have cut
 * off (`bound`: every place below it is read in full), at least `count` of them when the feed has them (`more`: a
 * partition has items beyond).
 */
async function readSlots(
  accountId: string,
  from: number,
  count: number,
): Promise<{ slots: Slot[]; bound: number; more: boolean }> {
  const share = Math.ceil((count * 5) / 4 / EVENT_SHARDS) + 3;
  const reads = await Promise.all(
    eventKeys.partitions(accountId).map(async (pk) => {
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
    }),
  );
  // Every place below `bound` is read in full: a partition whose read was cut may stop inside its last place's
  // parts (a place with no parts is read whole).
  let bound = Number.POSITIVE_INFINITY;
  for (const { items, cut } of reads) {
    const last = items.at(-1);
    if (!cut || !last) continue;
    const { seq, part } = eventKeys.parse(String(last.sk));
    const whole = part === 0 && last.parts === undefined;
    bound = Math.min(bound, whole ? seq + 1 : seq);
  }
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
  // An event whose parts the read cut off: its other parts (a large ticket's event is 2 parts at most).
  const tail = slots.at(-1);
  if (
    tail &&
    tail.item.type === eventKeys.itemType.event &&
    Number(tail.item.parts ?? 1) > tail.parts.length
  ) {
    tail.parts = (await placeItems(accountId, tail.seq)).map(bodyOf);
  }
  return { slots, bound, more: bound !== Number.POSITIVE_INFINITY };
}

/** Past every place's sort key (and its parts'). */
const SK_END = '~';

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
