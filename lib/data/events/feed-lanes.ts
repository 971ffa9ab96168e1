import { EVENT_SHARDS, eventKeys } from '../keys/events.ts';
import { eventSettleMs, MAX_CLOSED_PER_READ } from './close.ts';
import type { Slot } from './feed-slots.ts';
import { age } from './item.ts';
import { LANES, laneAtOrAfter, laneOf } from './lanes.ts';

/** What a feed page (./feed.ts) knows of each lane from the places it read: where it begins, where it stops. */

/** What a lane looks like from the places read: its first missing place, and its slots above it. */
export interface LaneState {
  lane: number;
  /** The lane's first place at or after `from` that no slot holds or covers. */
  gap: number;
  /** The lane's slots above the gap (so the gap was handed out: a writer holds it, or held it). */
  above: Slot[];
  /** The page read from the start and found nothing of the lane. */
  empty: boolean;
}

export function laneStates(slots: Slot[], from: number, starts: Map<number, number>): Map<number, LaneState> {
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
export function headStarts(slots: Slot[], from: number): Map<number, number> {
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
export function pageTarget(slots: Slot[], read: { bound: number; more: boolean }): number | undefined {
  const passable = slots.filter((s) => s.lo === undefined && s.seq < read.bound);
  const last = passable.at(-1)?.seq;
  // A read cut short by ranges alone: what it reached.
  if (last === undefined && read.more && Number.isFinite(read.bound)) return read.bound - 1;
  return last;
}
