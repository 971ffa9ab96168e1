import { RULE_SWEEP_SLOTS } from '#lib/data/keys.ts';
import { type LanePlan, splitRuleSweep, statusLanes } from '#lib/data/rules/sweep-lanes.ts';
import { getRuleSweep } from '#lib/data/rules/sweeps.ts';
import { getStatusCounts, statusTickets } from '#lib/data/tickets/tickets.ts';
import type { TicketStatus } from '#lib/tickets/types.ts';
import { nowMicros, nowMillis } from '#lib/time.ts';

/**
 * The first step of an account's moment sweep (docs/rules.md, "Moments of tickets already there", "Lanes"): the
 * root a rule write put is split into lanes that the runner sweeps side by side (./sweep.ts, ruleSweepLaneStep).
 * Each not-closed status (a time rule may fire in each; a closed ticket has no moment) gets one lane per
 * `perLane` tickets (its exact count), at least one and at most RULE_SWEEP_SLOTS / 4, each a range of equal time
 * of its postings, from its oldest (one keys-only Query of one key) to now, the last to the newest. Reads: the
 * root, the four counts and the four oldest postings (one round trip after the root's); writes: one transaction,
 * the root deleted (guarded by its `rv` and `rev`) and every slot put or deleted (lib/data/rules/sweep-lanes.ts).
 */

/** The statuses swept: each a time rule may fire in. */
const SWEPT: readonly TicketStatus[] = ['open', 'pending', 'in_progress', 'resolved'];

/** A status's lanes at most: 8. */
const LANES_PER_STATUS = RULE_SWEEP_SLOTS / SWEPT.length;

/**
 * Tickets a lane is given (a status of 8,000 or more has 8 lanes, one of 300 has one). A lane sweeps some 250–500
 * tickets a second deployed (docs/capacity.md, "Rules and macros"), so below 8 lanes a status one holds ~2–4 s of
 * work, and a lane costs its few calls more (its first reads, its Delete) whatever it holds.
 */
export const RULE_SWEEP_LANE_TICKETS = 1_000;

/** `more`: split (its lanes are due now); `done`: no sweep; `lost`: another run split it, or a newer write replaced it. */
export async function ruleSweepSplit(
  accountId: string,
  perLane = RULE_SWEEP_LANE_TICKETS,
): Promise<'more' | 'done' | 'lost'> {
  const sweep = await getRuleSweep(accountId);
  if (!sweep) return 'done';
  const [counts, oldest] = await Promise.all([
    getStatusCounts(accountId, SWEPT),
    Promise.all(
      SWEPT.map((status) => statusTickets(accountId, status, { after: null, limit: 1, read: false })),
    ),
  ]);
  const nowUs = nowMicros();
  const lanes: LanePlan[] = SWEPT.flatMap((status, i) =>
    statusLanes(status, counts[i] ?? 0, oldest[i]?.[0]?.at, nowUs, { perLane, most: LANES_PER_STATUS }),
  );
  return (await splitRuleSweep(sweep, lanes, nowMillis())) ? 'more' : 'lost';
}
