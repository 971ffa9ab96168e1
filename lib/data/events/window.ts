import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { timeLeftMs } from '#lib/request-scope.ts';
import { eventKeys } from '../keys/events.ts';
import { dynamo, tableName } from '../store/client.ts';
import { eventSettleMs } from './close.ts';
import { bodyOf, eventText, live } from './item.ts';
import type { EventRecord } from './shapes.ts';
import { firstPlaceSince } from './since.ts';

/**
 * The account's kept events of a time window, with their bodies, a bounded part at a time (what a rule's
 * backtest reads: lib/rules/backtest.ts). Each feed partition is read on its own from the window's start (a binary
 * search of its places, as eventsSince does) until a place taken after the window's end (give or take the settle
 * window: a partition's place times rise with its places within it), a round of the partitions at a time. When the
 * budget of items or time ends first, the part read is every place below the lowest place a partition stopped at
 * (`next`: where the next part starts), so parts never overlap or leave a gap.
 */

export interface WindowQuery {
  /** Epoch ms: events created at or after it. */
  from: number;
  /** Epoch ms: events created before it. */
  to: number;
  /** Where this part starts (a previous part's `next`); undefined: at the window's start. */
  after?: number | undefined;
  /** Which event types are answered (others are read and passed). */
  matches: (type: string) => boolean;
  /** Items (events of every type, voids, parts) one part reads at most. */
  maxItems: number;
}

export interface WindowPart {
  /** The events of the part, in place order (each object's in the order its changes committed). */
  events: (EventRecord & { seq: number })[];
  /** The first place of the next part; undefined: the window is read to its end. */
  next: number | undefined;
}

/** Items one partition's Query of a round reads at most. */
const ROUND_ITEMS = 250;
/** A part stops reading while this much of the request's time is left, to answer in it. */
const RESERVE_MS = 3_000;

interface Lane {
  pk: string;
  start: Record<string, unknown> | undefined;
  from: number;
  done: boolean;
  /** The last place read (the lane is read in full below it). */
  last: number;
  /** An event whose parts are still to come (a page may end between them). */
  open?: { seq: number; head: Record<string, unknown>; bodies: Buffer[] } | undefined;
}

export async function eventsInWindow(accountId: string, query: WindowQuery): Promise<WindowPart> {
  const settle = eventSettleMs();
  const partitions = eventKeys.partitions(accountId);
  const starts =
    query.after === undefined
      ? await Promise.all(partitions.map((pk) => firstPlaceSince(pk, query.from - settle)))
      : partitions.map(() => query.after);
  const lanes: Lane[] = partitions.map((pk, i) => {
    const from = starts[i];
    return { pk, start: undefined, from: from ?? 0, done: from === undefined, last: (from ?? 0) - 1 };
  });
  const found: (EventRecord & { seq: number })[] = [];
  let read = 0;
  // Past the budget, a lane whose page ended inside an event in parts reads on to its end (one item: a part stops
  // no nearer its start than where it began, else a part beginning at such an event would answer its own cursor).
  const reading = (l: Lane) => !l.done && (read < query.maxItems || l.open !== undefined);
  while (lanes.some(reading) && timeLeftMs() > RESERVE_MS) {
    const open = lanes.filter(reading);
    const limit = Math.max(1, Math.min(ROUND_ITEMS, Math.ceil((query.maxItems - read) / open.length)));
    const pages = await Promise.all(open.map((lane) => readLane(lane, limit)));
    for (const [i, items] of pages.entries()) {
      read += items.length;
      found.push(...takeItems(open[i] as Lane, items, query, settle));
    }
  }
  // An event begun in parts is read to its last part, so a part never ends inside one: every part moves on.
  for (const lane of lanes) {
    while (!lane.done && lane.open) {
      const items = await readLane(lane, Number(lane.open.head.parts));
      found.push(...takeItems(lane, items, query, settle));
    }
  }
  const cut = lanes.filter((l) => !l.done);
  const next = cut.length === 0 ? undefined : Math.min(...cut.map((l) => l.last + 1));
  const events = found
    .filter((e) => next === undefined || e.seq < next)
    .filter((e) => {
      const at = Date.parse(e.created_at);
      return at >= query.from && at < query.to;
    })
    .sort((a, b) => a.seq - b.seq);
  return { events, next };
}

/** The lane's next page of items (every attribute: the bodies too). */
async function readLane(lane: Lane, limit: number): Promise<Record<string, unknown>[]> {
  const page = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk >= :from',
      ExpressionAttributeValues: { ':pk': lane.pk, ':from': eventKeys.sort(lane.from) },
      ExclusiveStartKey: lane.start,
      Limit: limit,
    }),
  );
  lane.start = page.LastEvaluatedKey;
  if (page.LastEvaluatedKey === undefined) lane.done = true;
  return page.Items ?? [];
}

/**
 * The events a page of a lane completes (their parts read), up to the first place taken past the window's end
 * (the lane is done there). Moves the lane's `last` to the last place read whole.
 */
function takeItems(
  lane: Lane,
  items: Record<string, unknown>[],
  query: WindowQuery,
  settle: number,
): (EventRecord & { seq: number })[] {
  const events: (EventRecord & { seq: number })[] = [];
  const close = () => {
    const { open } = lane;
    lane.open = undefined;
    if (open) events.push({ ...parseEvent(open.head, open.bodies), seq: open.seq });
  };
  for (const item of items) {
    const { seq, part } = eventKeys.parse(String(item.sk));
    if (part > 0) {
      lane.open?.bodies.push(bodyOf(item));
      if (lane.open && lane.open.bodies.length === Number(lane.open.head.parts)) {
        close();
        lane.last = seq;
      }
      continue;
    }
    close();
    if (Number(item.at) >= query.to + settle) {
      // Every later place of the lane was taken after the window's end: none is read.
      lane.done = true;
      lane.last = Number.POSITIVE_INFINITY;
      return events;
    }
    lane.last = seq - 1;
    if (item.type === eventKeys.itemType.event && live(item) && query.matches(String(item.event_type))) {
      lane.open = { seq, head: item, bodies: [bodyOf(item)] };
      if (Number(item.parts ?? 1) <= 1) close();
    }
    if (!lane.open) lane.last = seq;
  }
  if (!lane.open && lane.done) lane.last = Number.POSITIVE_INFINITY;
  return events;
}

const parseEvent = (head: Record<string, unknown>, bodies: Buffer[]): EventRecord =>
  JSON.parse(eventText(head, bodies).toString('utf8')) as EventRecord;
