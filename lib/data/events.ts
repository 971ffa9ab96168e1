import { randomBytes } from 'node:crypto';
import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { intEnv } from '#lib/config/env.ts';
import { FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { dynamo, queryAll, tableName } from './client.ts';
import { ConcurrentWrite, isConditionFailure } from './errors.ts';
import { accountKeys, eventKeys } from './keys.ts';
import type { CommitAction } from './transact.ts';

/**
 * The events feed (decisions.md, "Events"; docs/data-model.md, "Events"). Every event has a place in its
 * account's sequence, taken just before the change's commit (one UpdateItem of the sequences item) and written
 * in that commit with the condition that the place is still free. A place whose commit failed is closed with a
 * void item, by its writer, or by a reader once the place is older than any living writer (EVENT_SETTLE_MS):
 * the reader's conditional put and the writer's conditional commit cannot both succeed. So the places below
 * any event a reader has seen are all settled (an event, or void forever), and the feed, read in sequence order
 * up to the first open place, never has an event inserted before one it has served.
 */

/** Events are kept 30 days (DynamoDB TTL on `expires_at`; reads skip expired items TTL has not removed yet). */
export const EVENT_RETENTION_SECONDS = 30 * 24 * 60 * 60;

/**
 * How old an open place must be before a reader closes it: a writer takes its place at most a function's
 * lifetime before its commit, so a place older than that belongs to a writer that is gone. EVENT_SETTLE_MS
 * replaces it (tests of faults that leave places open; read at each use). Exactness does not depend on it:
 * a commit that lands after its place was closed fails whole.
 */
export const eventSettleMs = () => intEnv('EVENT_SETTLE_MS', FUNCTION_TIMEOUT_MS);

/** DynamoDB holds 400 KB an item: an event's JSON text is stored in parts of at most this many bytes. */
const PART_BYTES = 350_000;
/** The commit actions one event may take (its item, and one part: a ticket's event is under 700 KB). */
export const MAX_EVENT_ACTIONS = 2;
/** At most this many open places are closed by one page read (each a conditional put, sent together). */
const MAX_CLOSED_PER_READ = 25;

/** An event as the domain describes it: plain data, written in the change's own commit. */
export interface EventDraft {
  type: string;
  /** The resource as its GET answers it after the change. */
  object: unknown;
  /** The changed fields' values before the change (updates only). */
  previous?: Record<string, unknown>;
  /** The version the change gives the object (the number in its ETag). */
  version: number;
}

/** An event as the API serves it. */
export interface EventRecord {
  id: string;
  type: string;
  created_at: string;
  data: { object: unknown; previous?: Record<string, unknown>; version: number };
}

// `evt_` + the place (base 36, 10 digits: lexical order is sequence order) + 10 hex digits drawn at random,
// so an id of another account (or a made-up one) names no event here even where the place exists.
const ID = /^evt_([0-9a-z]{10})([0-9a-f]{10})$/;
const eventId = (seq: number) => `evt_${seq.toString(36).padStart(10, '0')}${randomBytes(5).toString('hex')}`;

/** The place an event id names, or undefined when it is not an event id at all. */
export function placeOfEventId(id: string): number | undefined {
  const match = ID.exec(id);
  return match ? Number.parseInt(match[1] as string, 36) : undefined;
}

/** Places in the account's sequence, taken for one commit's events; settled when the commit does not land. */
export interface EventPlaces {
  accountId: string;
  actions: CommitAction[];
  seqs: number[];
}

/**
 * Places a create took with its number, in the same UpdateItem (no round trip of their own): its first commit
 * uses them; a retry takes new ones (the first commit's are settled, by then).
 */
export interface ReservedPlaces {
  seqs: number[];
  takenUs: number;
  spent?: boolean;
}

/** `count` places from `first` on, taken now (by an UpdateItem that added `count` to the `event` sequence). */
export const reservedPlaces = (first: number, count: number): ReservedPlaces => ({
  seqs: Array.from({ length: count }, (_, i) => first + i),
  takenUs: nowMicros(),
});

/**
 * The places of a commit's events, and the commit actions that write them: each event's item on the condition
 * that its place is still open (ConcurrentWrite otherwise: a reader closed it, nothing was written, decide again
 * with new places). Reserved places are used when there is one for each event; otherwise one UpdateItem takes
 * them.
 */
export async function takeEventPlaces(
  accountId: string,
  drafts: EventDraft[],
  reserved: ReservedPlaces[] = [],
): Promise<EventPlaces> {
  const usable = reserved.filter((r) => !r.spent);
  for (const r of reserved) r.spent = true;
  const seqs = usable.flatMap((r) => r.seqs).sort((a, b) => a - b);
  if (seqs.length === drafts.length) {
    const takenUs = Math.min(...usable.map((r) => r.takenUs));
    const actions = drafts.flatMap((draft, i) => eventActions(accountId, seqs[i] as number, draft, takenUs));
    return { accountId, actions, seqs };
  }
  if (seqs.length > 0) await settleEventPlaces(accountId, seqs);
  const { Attributes } = await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: accountKeys.sequences(accountId),
      UpdateExpression: 'ADD #event :n',
      ExpressionAttributeNames: { '#event': 'event' },
      ExpressionAttributeValues: { ':n': drafts.length },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  const taken = reservedPlaces(Number(Attributes?.event) - drafts.length + 1, drafts.length);
  const actions = drafts.flatMap((draft, i) =>
    eventActions(accountId, taken.seqs[i] as number, draft, taken.takenUs),
  );
  return { accountId, actions, seqs: taken.seqs };
}

function eventActions(accountId: string, seq: number, draft: EventDraft, takenUs: number): CommitAction[] {
  const [head, ...parts] = eventItems(accountId, seq, draft, takenUs).items;
  return [
    {
      what: 'event',
      action: {
        Put: {
          TableName: tableName(),
          Item: head as Record<string, unknown>,
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      refused: () => new ConcurrentWrite(),
    },
    ...parts.map(
      (Item): CommitAction => ({ what: 'event_part', action: { Put: { TableName: tableName(), Item } } }),
    ),
  ];
}

/**
 * The items of an event at place `seq` of the account's sequence, taken at `takenUs`: its item, then its parts
 * when its JSON text is longer than one item holds. What a commit puts (on the condition that the place is
 * open); the benchmark's bulk loader writes the same items (and sets the `event` sequence to match).
 */
export function eventItems(
  accountId: string,
  seq: number,
  draft: EventDraft,
  takenUs: number,
): { id: string; items: Record<string, unknown>[] } {
  const record: EventRecord = {
    id: eventId(seq),
    type: draft.type,
    created_at: formatTimestamp(takenUs),
    data: {
      object: draft.object,
      ...(draft.previous ? { previous: draft.previous } : {}),
      version: draft.version,
    },
  };
  const text = Buffer.from(JSON.stringify(record), 'utf8');
  const parts: Buffer[] = [];
  for (let at = 0; at < text.length; at += PART_BYTES) parts.push(text.subarray(at, at + PART_BYTES));
  const expires_at = Math.floor(takenUs / 1e6) + EVENT_RETENTION_SECONDS;
  const head = {
    ...eventKeys.place(accountId, seq),
    type: 'event',
    id: record.id,
    event_type: draft.type,
    at: Math.floor(takenUs / 1000),
    expires_at,
    body: parts[0],
    ...(parts.length > 1 ? { parts: parts.length } : {}),
  };
  const rest = parts.slice(1).map((part, i) => ({
    ...eventKeys.part(accountId, seq, i + 1),
    type: 'event_part',
    expires_at,
    body: part,
  }));
  return { id: record.id, items: [head, ...rest] };
}

/**
 * Closes places whose commit did not land (or may not have): a void item where none is. A place whose event
 * landed stays as it is. Best effort: a place left open is closed by a reader after EVENT_SETTLE_MS.
 */
export async function settleEventPlaces(accountId: string, seqs: number[]): Promise<boolean> {
  const closed = await Promise.all(seqs.map((seq) => closePlace(accountId, seq).catch(() => false)));
  return closed.every(Boolean);
}

/**
 * Gives up the reserved places no commit used (a commit's writer settles those it used): a create that fails
 * between taking its number and its commit (a read beside the number failing, a refusal) closes them at once
 * instead of holding every later event of the account for the settle window.
 */
export async function giveUpReserved(
  accountId: string,
  reserved: (ReservedPlaces | undefined)[],
): Promise<void> {
  const unused = reserved.filter((r): r is ReservedPlaces => r !== undefined && !r.spent);
  for (const r of unused) r.spent = true;
  const seqs = unused.flatMap((r) => r.seqs);
  if (seqs.length > 0) await settleEventPlaces(accountId, seqs);
}

/**
 * A reservation of places awaited beside other reads: when a read fails, the places are given up once the
 * reservation answers (Promise.all alone would reject at once and leave them open).
 */
export async function besideReservation<R, T>(
  accountId: string,
  reservation: Promise<R>,
  placesOf: (reserved: R) => ReservedPlaces,
  reads: Promise<T>,
): Promise<[R, T]> {
  try {
    return await Promise.all([reservation, reads]);
  } catch (error) {
    const reserved = await reservation.catch(() => undefined);
    if (reserved !== undefined) await giveUpReserved(accountId, [placesOf(reserved)]);
    throw error;
  }
}

/**
 * Answers true when the place is now void by this call, false when something (an event) is there. `at`: the
 * time no place below it was taken after (now, for a writer closing its own; a reader closing places below an
 * item gives that item's, so the voids it writes do not look younger than the places they close).
 */
async function closePlace(accountId: string, seq: number, at = Date.now()): Promise<boolean> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...eventKeys.place(accountId, seq),
          type: 'event_void',
          at,
          expires_at: Math.floor(Date.now() / 1000) + EVENT_RETENTION_SECONDS,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

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
  /** The last event examined (the cursor to read after next), or undefined when none was. */
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
      if (slot.item.type !== 'event' || !live(slot.item)) continue;
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

const live = (item: Record<string, unknown>) => Number(item.expires_at) > Date.now() / 1000;
const age = (item: Record<string, unknown>) => Date.now() - Number(item.at);

/**
 * The feed read from its start begins at the oldest place kept. The places below it are expired (removed by
 * TTL) or were never written: a place taken before it whose writer may still be alive keeps the page waiting
 * until the oldest place is older than any living writer; then the places just below an event there are closed
 * (docs/data-model.md, "Events", says what this does not cover).
 */
async function headSettled(accountId: string, oldest: Slot): Promise<boolean> {
  if (oldest.seq <= 1) return true;
  if (age(oldest.item) < eventSettleMs()) return false;
  if (oldest.item.type !== 'event') return true;
  const below = Math.min(oldest.seq - 1, MAX_CLOSED_PER_READ);
  const seqs = Array.from({ length: below }, (_, i) => oldest.seq - below + i);
  const at = Number(oldest.item.at);
  return (await Promise.all(seqs.map((seq) => closePlace(accountId, seq, at)))).every(Boolean);
}

/** Reads places from `from` on (at least `count` items when there are): in sequence order, parts joined. */
async function readSlots(
  accountId: string,
  from: number,
  count: number,
): Promise<{ slots: Slot[]; more: boolean }> {
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk >= :from',
      ExpressionAttributeValues: { ':pk': eventKeys.feedPartition(accountId), ':from': eventKeys.sort(from) },
      ConsistentRead: true,
    },
    count,
  );
  const slots: Slot[] = [];
  for (const item of items) {
    const { seq, part } = eventKeys.parse(String(item.sk));
    if (part === 0) slots.push({ seq, item, parts: [bodyOf(item)] });
    else if (slots.at(-1)?.seq === seq) slots.at(-1)?.parts.push(bodyOf(item));
  }
  // An event whose parts the read cut off: its other parts (a large ticket's event is 2 parts at most).
  const tail = slots.at(-1);
  if (tail && Number(tail.item.parts ?? 1) > tail.parts.length) {
    tail.parts = (await placeItems(accountId, tail.seq)).map(bodyOf);
  }
  // Fewer items than asked for: the feed ends here for now (no further read this page).
  return { slots, more: items.length >= count };
}

const bodyOf = (item: Record<string, unknown>) =>
  item.body instanceof Uint8Array ? Buffer.from(item.body) : Buffer.alloc(0);

/** A place's items: the event (or void) and its parts, in order. */
function placeItems(accountId: string, seq: number) {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :place)',
    ExpressionAttributeValues: { ':pk': eventKeys.feedPartition(accountId), ':place': eventKeys.sort(seq) },
    ConsistentRead: true,
  });
}

/** Closes the open places from `expected` up to `next`'s, when `next` is older than any living writer. */
async function closeOpenPlaces(accountId: string, expected: number, next: Slot): Promise<boolean> {
  if (age(next.item) < eventSettleMs()) return false;
  const open = Math.min(next.seq - expected, MAX_CLOSED_PER_READ);
  const seqs = Array.from({ length: open }, (_, i) => expected + i);
  const at = Number(next.item.at);
  const closed = (await Promise.all(seqs.map((seq) => closePlace(accountId, seq, at)))).every(Boolean);
  // More open places than one read closes, or one that turned out to hold an event: the next read goes on.
  return closed && open === next.seq - expected;
}

/** One event by id, or undefined (unknown, expired, another account's). One Query: the event and its parts. */
export async function getEvent(accountId: string, id: string): Promise<EventRecord | undefined> {
  const body = await getEventBody(accountId, id);
  return body ? (JSON.parse(body.toString('utf8')) as EventRecord) : undefined;
}

/**
 * One event's JSON text as stored (what GET /api/events/{id} answers, and what a webhook delivery sends), or
 * undefined as getEvent. One Query: the event and its parts.
 */
export async function getEventBody(accountId: string, id: string): Promise<Buffer | undefined> {
  const seq = placeOfEventId(id);
  if (seq === undefined) return undefined;
  const [head, ...parts] = await placeItems(accountId, seq);
  if (!head || head.id !== id || !live(head)) return undefined;
  return Buffer.concat([head, ...parts].map(bodyOf));
}

/** What an event item says of its event without its body. */
export interface EventSummary {
  id: string;
  type: string;
  /** Epoch ms of the place's taking (its created_at, to the millisecond). */
  at: number;
}

/** An event item (a stream record's image, or a read item) summarised, or undefined for any other item. */
export function eventSummaryOf(item: Record<string, unknown>): EventSummary | undefined {
  if (item.type !== 'event' || typeof item.id !== 'string' || typeof item.event_type !== 'string')
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
