import { ServiceUnavailable } from '#lib/errors.ts';
import { timeLeftMs } from '#lib/request-scope.ts';
import { eventKeys } from '../keys/events.ts';
import { type PendingWrites, SETTLE_RESERVE_MS } from './bump.ts';
import { headStarts, type LaneState, laneStates, pageTarget } from './feed-lanes.ts';
import { settleLanes } from './feed-settle.ts';
import { readSlots, type Slot, type SlotsRead } from './feed-slots.ts';
import { placeOfEventId } from './ids.ts';
import { bodyOf, eventText, live, placeItems } from './item.ts';
import type { EventRecord } from './shapes.ts';

/**
 * Reading the feed in place order up to its first place not settled, and one event by id (the feed's design:
 * ../events.ts). A page's steps: ./feed-slots.ts reads, ./feed-lanes.ts sees the lanes, ./feed-settle.ts settles.
 */

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

/** Rounds of reads one page makes at most. */
const MAX_ROUNDS = 4;
/** Times one page settles missing places (bumps lagging lanes, closes old open places): each 1–2 round trips. */
const MAX_SETTLES = 2;

/** What a page has served and passed so far. */
interface Page {
  events: EventRecord[];
  /** The cursor to answer (FeedPage.last). */
  last: string | undefined;
  examined: number;
  /** Every place below it is settled (and passed). */
  from: number;
  settles: number;
}

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
  // Every place below `from` is settled (and passed); from the start, each lane begins at its oldest kept place.
  const from = afterSeq === undefined ? 0 : afterSeq + 1;
  const page: Page = { events: [], last: undefined, examined: 0, from, settles: 0 };
  const fromStart = afterSeq === undefined;
  // Range voids of this page's bumps being written (their counters say so already): awaited before it answers.
  const pending: PendingWrites = [];
  for (let round = 0; round < MAX_ROUNDS && page.examined < query.limit; round++) {
    // What the page still needs, +1: the cursor's own item, or a look past the last place read.
    const read = await readSlots(
      accountId,
      round === 0 && afterSeq !== undefined ? afterSeq : page.from,
      query.limit - page.examined + 1,
    );
    if (round === 0 && afterSeq !== undefined) dropCursor(read.slots, afterSeq, query.after);
    const slots = read.slots.filter((s) => s.seq >= page.from);
    const starts = fromStart ? headStarts(slots, page.from) : new Map<number, number>();
    const lanes = await settledLanes(accountId, page, { slots, read, starts, pending });
    const settledBelow = Math.min(read.bound, ...[...lanes.values()].map((l) => l.gap));
    const full = servePlaces(page, slots, settledBelow, query);
    // The next round reads on from the first place not settled (or not read): a gap this page could not settle
    // ends it there.
    if (full || settledBelow < read.bound || !read.more) break;
    page.from = Math.max(page.from, settledBelow);
  }
  // A range write that failed fails the page when its cursor names that range (no item would answer for it);
  // else the page stands (the counter holds the range, and a later reader closes those places once old enough).
  const failed = (await Promise.all(pending)).find((f) => f !== undefined && f.id === page.last);
  if (failed) throw failed.error;
  return { events: page.events, last: page.last };
}

/** Takes the cursor's own place out of the first round's slots: UnknownEventCursor unless it is that live event. */
function dropCursor(slots: Slot[], afterSeq: number, after: string | undefined): void {
  const at = slots.findIndex((s) => s.seq === afterSeq);
  const cursor = slots[at];
  if (!cursor || cursor.item.id !== after || !live(cursor.item)) throw new UnknownEventCursor();
  slots.splice(at, 1);
}

/** One round's places from the page's `from` on, and what it knows of them. */
interface Round {
  slots: Slot[];
  read: SlotsRead;
  starts: Map<number, number>;
  pending: PendingWrites;
}

/**
 * The lanes as the round's places show them, after settling their missing places below the page's target when
 * there are any (adding the slots that makes known to the round's), the page may settle again and time is left.
 */
async function settledLanes(accountId: string, page: Page, round: Round): Promise<Map<number, LaneState>> {
  const { slots, read, starts, pending } = round;
  const lanes = laneStates(slots, page.from, starts);
  const target = pageTarget(slots, read);
  if (
    target === undefined ||
    page.settles >= MAX_SETTLES ||
    timeLeftMs() <= SETTLE_RESERVE_MS ||
    ![...lanes.values()].some((l) => l.gap < target)
  ) {
    return lanes;
  }
  page.settles++;
  // A store too slow or busy for the settling writes (past their retries, or the deadline near): the page
  // serves what is settled already, and the next page settles the rest.
  const found = await settleLanes(accountId, lanes, target, starts, pending).catch((error: unknown) => {
    if (error instanceof ServiceUnavailable) return [];
    throw error;
  });
  slots.push(...found);
  slots.sort((a, b) => a.seq - b.seq);
  return laneStates(slots, page.from, starts);
}

/**
 * Serves the round's places below `settledBelow` in place order, up to `limit` examined: events that match are
 * served, every event examined moves the cursor, and void places move it only while none was examined. Answers
 * true when the page is full.
 */
function servePlaces(page: Page, slots: Slot[], settledBelow: number, query: FeedQuery): boolean {
  for (const slot of slots) {
    if (slot.seq >= settledBelow) break;
    if (slot.item.type !== eventKeys.itemType.event || !live(slot.item)) {
      // Voids written before they carried an id cannot be a cursor: the next page reads them again.
      const cursorable = slot.item.type === eventKeys.itemType.void && live(slot.item) && !slot.synthetic;
      if (page.examined === 0 && cursorable && typeof slot.item.id === 'string') page.last = slot.item.id;
      continue;
    }
    const record = JSON.parse(eventText(slot.item, slot.parts).toString('utf8')) as EventRecord;
    page.examined++;
    page.last = record.id;
    page.from = slot.seq + 1;
    if (query.matches(record.type)) page.events.push(record);
    if (page.examined === query.limit) return true;
  }
  return false;
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
  return eventText(head, [head, ...parts].map(bodyOf));
}
