import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig } from '#lib/accounts/types.ts';
import { activeRules } from '#lib/data/rules/rules.ts';
import { getSweepLane, laneStillAction, type SweepLane, saveSweepLane } from '#lib/data/rules/sweep-lanes.ts';
import { getRuleSweep } from '#lib/data/rules/sweeps.ts';
import { lostToRace, StaleVersion } from '#lib/data/store/errors.ts';
import type { Versioned } from '#lib/data/store/items.ts';
import {
  getTicketByOrderKey,
  statusTickets,
  ticketsFitTogether,
  updateTicketItems,
  updateTicketsTogether,
} from '#lib/data/tickets/tickets.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { RULES_FRESH_SECONDS } from './cache.ts';
import { withNextMoment } from './in-change.ts';
import type { Rule } from './types.ts';

/**
 * The moments of tickets already there (decisions.md, "Business rules", `on: time`; docs/rules.md, "Moments of
 * tickets already there"): every ticket change keeps the ticket's next time-rule moment (`ruleDueAt`, its due
 * entry) over the rules it reads, so a rule write that touches an active time rule leaves the tickets nobody
 * changes with a moment of the old rules. The write therefore puts the account's sweep (lib/data/rules/sweeps.ts),
 * due RULE_SWEEP_DELAY_MS on: every change that starts after that reads the new rules from the cache (at most
 * RULES_FRESH_SECONDS behind), and the sweep computes again those changed before and the ones nobody changes. Its
 * first step splits it into lanes (./sweep-split.ts), each a range of one not-closed status's tickets, swept side by
 * side. A lane's step reads one page of its range (oldest first, from where its last step ended), the active rules
 * from the store (not the cache: never older than the write) and the configuration, and writes the tickets whose
 * moment moved together (each guarded by its version read, the commit by a check that the lane is still this
 * sweep's); then saves where it got to. A ticket that moves between statuses meanwhile (behind the sweep or ahead of
 * it) does so by a change, which computes its own moment: no second round, as the hand-back needs.
 */

/** Tickets a step reads. */
export const RULE_SWEEP_STEP = 25;

/** How long after a rule write its sweep is due: the rules cache's freshness and a second. */
export const RULE_SWEEP_DELAY_MS = (RULES_FRESH_SECONDS + 1) * 1000;

/** The sweep was replaced by a newer rule write's (the check of a commit of moments refused). */
class SweepReplaced extends Error {
  constructor() {
    super('The moment sweep was replaced by a newer rule write');
  }
}

/**
 * One step of a lane of the account's sweep: `done` once its range is read to the end (the lane deleted), or it is
 * gone; `lost` when another run saved it first, or a newer rule write replaced the sweep (that run, or the new
 * sweep, goes on); `more` otherwise. A write that failed is thrown and the place is not saved, so the next step
 * reads the page again (writing only the moments still to move).
 */
export async function ruleSweepLaneStep(
  accountId: string,
  slot: number,
  held: SweepRules = new Map(),
): Promise<'more' | 'done' | 'lost'> {
  // The root read beside it: a newer rule write's root (another rv) stops the lane at once, before its split does.
  const [lane, root] = await Promise.all([getSweepLane(accountId, slot), getRuleSweep(accountId)]);
  if (!lane) return 'done';
  if (root && root.rv !== lane.rv) {
    // Its due entry goes with it (the newer sweep's split would delete it too).
    await saveSweepLane(lane, null);
    return 'lost';
  }
  const [listed, config, rules] = await Promise.all([
    statusTickets(accountId, lane.status, { after: lane.after, before: lane.before, limit: RULE_SWEEP_STEP }),
    getAccountConfig(accountId),
    rulesOf(lane, held),
  ]);
  // No account (deleted): done.
  if (!config) return save(lane, null);
  try {
    await writeMoments(lane, config, rules, listed);
  } catch (error) {
    if (error instanceof SweepReplaced) return 'lost';
    throw error;
  }
  const last = listed.at(-1);
  return save(lane, listed.length === RULE_SWEEP_STEP && last ? last.at : null);
}

/** The rules a pass's steps of one sweep read (all its lanes), by the sweep's `rv`: read once, not once a step. */
export type SweepRules = Map<number, Promise<readonly Rule[]>>;

/**
 * The account's active rules from the store, read after the lane (so they hold its write and every one before),
 * once for the steps a pass takes of its lanes (up to 1,000 rules: ~1 MB, 256 read units): a later rule write that
 * touches a time rule replaces the sweep (another `rv`, read again); one landing meanwhile stops these lanes at
 * their next step, and its sweep's split refuses any of their commits after it (docs/rules.md, "Lanes").
 */
function rulesOf(lane: SweepLane, held: SweepRules): Promise<readonly Rule[]> {
  const known = held.get(lane.rv);
  if (known) return known;
  const read = activeRules(lane.accountId).then(({ rules }) => rules);
  held.clear();
  held.set(lane.rv, read);
  read.catch(() => held.delete(lane.rv));
  return read;
}

async function save(lane: SweepLane, after: string | null): Promise<'more' | 'done' | 'lost'> {
  if (!(await saveSweepLane(lane, after))) return 'lost';
  return after ? 'more' : 'done';
}

type Listed = { at: string; stored?: Versioned<Ticket> | undefined };
type Moved = { at: string; stored: Versioned<Ticket>; after: Ticket };

/**
 * Writes the page's moments that moved, as many tickets to a commit as fit (ticketsFitTogether; a page of usual
 * tickets is one commit), each guarded by its version, the commit by the lane's check (once: every ticket write
 * of a step checking the one item at once would conflict with each other on DynamoDB). A commit refused (a change
 * landed on one of them since the page was read, or a conflict) is written again one ticket at a time, each read
 * again (sweepTicket).
 */
async function writeMoments(
  lane: SweepLane,
  config: AccountConfig,
  rules: readonly Rule[],
  listed: Listed[],
) {
  const { accountId } = lane;
  let left = listed.flatMap((l): Moved[] => {
    const after = l.stored && withNextMoment(l.stored.entity, rules, config);
    return l.stored && after && after !== l.stored.entity ? [{ at: l.at, stored: l.stored, after }] : [];
  });
  const check = [laneStillAction(lane, () => new SweepReplaced())];
  while (left.length > 0) {
    const changes = left.map(({ stored, after }, i) => ({
      before: stored.entity,
      after,
      version: stored.version,
      event: [],
      items: i === 0 ? check : [],
    }));
    const fit = ticketsFitTogether(accountId, changes);
    const chunk = left.slice(0, Math.max(1, fit));
    left = left.slice(chunk.length);
    // One that fits no commit with another (a large ticket) is written alone, as a change writes it.
    if (fit > 1) {
      try {
        await updateTicketsTogether(accountId, changes.slice(0, fit));
        continue;
      } catch (error) {
        if (!lostToRace(error)) throw error;
      }
    }
    for (const one of chunk) await sweepTicket(lane, config, rules, one.at, one.stored);
  }
}

/** Tries a ticket's write at most this many times (each lost to a change landing first) before the step fails. */
const MAX_ATTEMPTS = 3;

/**
 * Writes the ticket's moment over the rules read, when it moved: only `ruleDueAt` (an internal field: no event),
 * guarded by the version read and by the lane still being this sweep's. A change landing first (StaleVersion) is read
 * again and its moment computed again over the rules read (the store's: never older than the change's own), so a
 * change racing the sweep is never overwritten with an older moment, nor left with one of the rules before the write.
 */
async function sweepTicket(
  lane: SweepLane,
  config: AccountConfig,
  rules: readonly Rule[],
  at: string,
  stored: Versioned<Ticket>,
): Promise<void> {
  const { accountId } = lane;
  let current: Versioned<Ticket> | undefined = stored;
  for (let attempt = 0; current && attempt < MAX_ATTEMPTS; attempt++) {
    const before: Ticket = current.entity;
    const after = withNextMoment(before, rules, config);
    if (after === before) return;
    try {
      await updateTicketItems({
        accountId,
        before,
        after,
        version: current.version,
        items: [laneStillAction(lane, () => new SweepReplaced())],
        event: [],
      });
      return;
    } catch (error) {
      if (!lostToRace(error)) throw error;
      current = await getTicketByOrderKey(accountId, at);
    }
  }
  if (current) throw new StaleVersion();
}
