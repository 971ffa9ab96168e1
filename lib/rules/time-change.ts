import { isDeepStrictEqual } from 'node:util';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { ReservedPlaces } from '#lib/data/events.ts';
import { lostToRace } from '#lib/data/store/errors.ts';
import type { Versioned } from '#lib/data/store/items.ts';
import { getTicketByOrderKey } from '#lib/data/tickets/tickets.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import { writeRuledChange } from '#lib/tickets/ruled-write.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { nowMicros, parseTimestamp } from '#lib/time.ts';
import { getActiveRules } from './cache.ts';
import { changeRules } from './in-change.ts';
import { dueTimeRules, lookedAfter } from './time-rules.ts';

/**
 * A ticket's time rules at their moment (decisions.md, "Business rules", `on: time`; docs/rules.md, "Time rules
 * at their moment"): the due runner (lib/tickets/breaches.ts) reads the tickets whose due entry has come, and for
 * each whose `ruleDueAt` has passed this runs the time rules due (their cycles not looked at yet), then the `updated`
 * rules with `via: rule`, as a change like any other: one transaction guarded by the version read, with its event,
 * its rules' messages and firings, the cycles looked at and the next moment. So:
 * - a change committed first is read (its new moment, or conditions that no longer hold), or refuses this commit
 *   (StaleVersion: read and decide again);
 * - a runner that died before its commit left the entry: the next pass fires it, late by the stall, never twice
 *   (the cycle is looked at in the commit that fires it);
 * - a moment that found no rule to fire (a rule deleted or changed since) writes only the next moment, no event.
 */

const MAX_ATTEMPTS = 5;

/**
 * Runs the time rules due on the ticket now, if any; answers how many rules fired. `first`: the ticket as the due
 * pass read it, and `place` the place it took for its event after that read (lib/tickets/due-reads.ts): both for
 * the first attempt only (a place taken before a read again could be below an event that read sees).
 */
export async function runTimeRules(
  accountId: string,
  orderKey: string,
  first?: Versioned<Ticket>,
  place?: ReservedPlaces,
): Promise<number> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    // The first attempt may take the ticket as the due pass read it; a retry reads it again.
    const stored = attempt === 1 && first ? first : await getTicketByOrderKey(accountId, orderKey);
    const before = stored?.entity;
    const nowUs = nowMicros();
    if (!stored || !before || !momentPassed(before, nowUs)) return 0;
    const [config, rules] = await Promise.all([getAccountConfig(accountId), getActiveRules(accountId)]);
    if (!config) return 0;
    const looked = before.ruleCycles ?? {};
    const calendar = config.account.businessHours ?? null;
    const due = dueTimeRules(before, rules, nowUs, { calendar, looked });
    const kept = new Set(rules.filter((r) => r.on === 'time').map((r) => String(r.id)));
    const cycles = Object.fromEntries(
      Object.entries(lookedAfter(before, due, looked)).filter(([id]) => kept.has(id)),
    );
    const ruled = await changeRules({
      accountId,
      config,
      rules,
      due,
      before,
      after: { ...before, ruleCycles: cycles },
      context: { kind: 'time', channel: 'api', automatic: false, nowUs },
    });
    const after = ruled.ticket;
    if (isDeepStrictEqual(after, before)) return 0;
    const shown = !isDeepStrictEqual(presentCreatedTicket(before), presentCreatedTicket(after));
    try {
      await writeRuledChange({
        accountId,
        before,
        after,
        version: stored.version,
        applied: ruled,
        lost: [],
        shown,
        place: attempt === 1 && first ? place : undefined,
      });
    } catch (error) {
      // Changed since the read, or its event's place closed by a reader meanwhile (a pass's place held past the
      // settle window: lib/tickets/due-reads.ts), or lost to a conflict: nothing was written; read and decide again.
      if (lostToRace(error)) continue;
      throw error;
    }
    return ruled.fired.length;
  }
  return 0;
}

/** Whether the ticket's next time-rule moment has come (the due pass reads it too: lib/tickets/due-reads.ts). */
export const momentPassed = (ticket: Ticket, nowUs: number): boolean =>
  !!ticket.ruleDueAt && parseTimestamp(ticket.ruleDueAt) <= nowUs;
