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
 * budget of items or time ends first, the part read is every place below one cut (`next`: where the next part
 * starts), so parts never overlap or leave a gap. The cut never falls inside a commit: a commit's events of one
 * object are places of one partition taken together, with one time (`at`), so a partition's places are read in
 * runs of one time, and the cut is the start of a run in every partition (a run it would split moves it down to
 * the run's start). A reader of a part therefore sees each change whole: a message with its ticket's update.
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
  /** Items (events of every type, voids, parts) one part reads at most, past which only a run is finished. */
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
/** Items a partition reads a round past the budget, to finish a run (a commit's events: a few). */
const RUN_ITEMS = 2;
/** A part stops reading while this much of the request's time is left, to answer in it. */
const RESERVE_MS = 3_000;

/** A run of a partition's places taken at one time (ms): a commit's events, or several. */
interface Run {
  at: number;
  first: number;
  end: number;
}

interface Lane {
  pk: string;
  start: Record<string, unknown> | undefined;
  from: number;
  /** Read to its end, or to a place taken past the window's end. */
  done: boolean;
  /** The runs read, in order; the last one may go on (unless the lane is done). */
  runs: Run[];
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
    return { pk, start: undefined, from: from ?? 0, done: from === undefined, runs: [] };
  });
  const partStart = Math.min(...lanes.filter((l) => !l.done).map((l) => l.from));
  const found: (EventRecord & { seq: number })[] = [];
  let read = 0;
  const round = async (reading: Lane[], limit: number) => {
    const pages = await Promise.all(reading.map((lane) => readLane(lane, limit)));
    for (const [i, items] of pages.entries()) {
      read += items.length;
      found.push(...takeItems(reading[i] as Lane, items, query, settle));
    }
  };
  while (lanes.some((l) => !l.done) && read < query.maxItems && timeLeftMs() > RESERVE_MS) {
    const open = lanes.filter((l) => !l.done);
    await round(open, Math.max(1, Math.min(ROUND_ITEMS, Math.ceil((query.maxItems - read) / open.length))));
  }
  let next = cutOf(lanes);
  // A cut at the part's start would answer its own cursor: the partitions furthest behind read on past the
  // budget, a few items at a time, until it moves.
  while (next !== undefined && next <= partStart && timeLeftMs() > RESERVE_MS) {
    const going = lanes.filter((l) => !l.done);
    const behind = Math.min(...going.map(lastRunStart));
    await round(
      going.filter((l) => lastRunStart(l) === behind),
      RUN_ITEMS,
    );
    next = cutOf(lanes);
  }
  const events = found
    .filter((e) => next === undefined || e.seq < next)
    .filter((e) => {
      const at = Date.parse(e.created_at);
      return at >= query.from && at < query.to;
    })
    .sort((a, b) => a.seq - b.seq);
  return { events, next };
}

/**
 * Where the part ends: below the first run each partition may not have read whole (its last, unless it is done),
 * moved down to the start of any run it would split, in any partition. Undefined: every partition is done.
 */
function cutOf(lanes: Lane[]): number | undefined {
  const going = lanes.filter((l) => !l.done);
  if (going.length === 0) return undefined;
  let cut = Math.min(...going.map(lastRunStart));
  for (let moved = true; moved; ) {
    moved = false;
    for (const lane of lanes) {
      for (const [i, run] of lane.runs.entries()) {
        const end = !lane.done && i === lane.runs.length - 1 ? Number.POSITIVE_INFINITY : run.end;
        if (run.first < cut && cut <= end) {
          cut = run.first;
          moved = true;
        }
      }
    }
  }
  return cut;
}

/** Where a lane's last run starts (it may go on), or where it starts reading. */
const lastRunStart = (lane: Lane) => lane.runs.at(-1)?.first ?? lane.from;

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
 * (the lane is done there), and the runs of places it read.
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
      if (lane.open && lane.open.bodies.length === Number(lane.open.head.parts)) close();
      continue;
    }
    close();
    const at = Number(item.at);
    if (at >= query.to + settle) {
      // Every later place of the lane was taken after the window's end: none is read.
      lane.done = true;
      return events;
    }
    const run = lane.runs.at(-1);
    if (run && run.at === at) run.end = seq;
    else lane.runs.push({ at, first: seq, end: seq });
    if (item.type === eventKeys.itemType.event && live(item) && query.matches(String(item.event_type))) {
      lane.open = { seq, head: item, bodies: [bodyOf(item)] };
      if (Number(item.parts ?? 1) <= 1) close();
    }
  }
  return events;
}

const parseEvent = (head: Record<string, unknown>, bodies: Buffer[]): EventRecord =>
  JSON.parse(eventText(head, bodies).toString('utf8')) as EventRecord;
