import { nowMillis } from '#lib/time.ts';
import { EVENT_SHARDS } from '../keys/events.ts';
import { bumpLane, bumpTarget, type PendingWrites } from './bump.ts';
import { closePlace, eventSettleMs, MAX_CLOSED_PER_READ } from './close.ts';
import type { LaneState } from './feed-lanes.ts';
import { rangeSlot, type Slot, voidSlot } from './feed-slots.ts';
import { age } from './item.ts';
import { placeOf } from './lanes.ts';

/** Settling the places a feed page (./feed.ts) must pass: closing old open places, bumping lagging lanes. */

/**
 * Settles the lanes' missing places below `target`, one round trip (two when a bump finds an old open place):
 * a lane with slots above its missing place handed it out, so the place is closed when a slot above it (or the
 * lane's last take) is older than any living writer; a lane with nothing above it is bumped past `target` (to
 * now's tick when later: bumpTarget, so that it does not lag again at once). Answers the slots this makes known
 * (voids it wrote, ranges of bumps).
 */
export async function settleLanes(
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
