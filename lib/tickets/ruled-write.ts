import type { ReservedPlaces } from '#lib/data/events.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { freedAction } from '#lib/data/tickets/freed.ts';
import { updateTicketItems } from '#lib/data/tickets/tickets.ts';
import { updatedEvent } from '#lib/events/drafts.ts';
import { type RulesApplied, ruleItems, threadRuleMessages, withRuleEvents } from '#lib/rules/in-change.ts';
import { nowMicros } from '#lib/time.ts';
import type { Versioned } from '#lib/versioned-update.ts';
import { breachEvents } from './breaches.ts';
import { presentCreatedTicket } from './present.ts';
import { freedByTicketChange } from './queue.ts';
import type { ClockState } from './sla-clocks.ts';
import type { Ticket } from './types.ts';

/**
 * The commit of a ticket change its rules ran on (a PATCH, a macro applied): in one transaction guarded by the
 * version read, the ticket as the change and its rules leave it, the rules' messages (a reply in the outbox) and
 * firings, the freed entry of an agent the change frees, the kept answer of an Idempotency-Key, and the events:
 * the breaches it loses, `ticket.updated` (with what its rules say), a `message.created` per message written.
 * Answers the new version (StaleVersion, TeamGone, UpdateTooLarge as updateTicketItems throws them).
 */
export interface RuledWrite {
  accountId: string;
  before: Ticket;
  after: Ticket;
  version: number;
  applied: RulesApplied;
  /** The breaches the change and its rules lose (lib/tickets/breaches.ts). */
  lost: ClockState[];
  attach?: ((stored: Versioned<Ticket>) => CommitAttachment) | undefined;
  /**
   * Whether the change shows (default): a time change that only looked at a moment and moved the next one changes
   * nothing the ticket shows, and writes no `ticket.updated` (lib/rules/time-change.ts).
   */
  shown?: boolean | undefined;
  /** Places taken for its events after `before` was read (the due runner's: ./due-reads.ts); used once. */
  place?: ReservedPlaces | undefined;
}

export async function writeRuledChange(change: RuledWrite): Promise<number> {
  const { accountId, before, after, version } = change;
  const applied = await threadRuleMessages(accountId, before, change.applied);
  return updateTicketItems({
    accountId,
    before,
    after,
    version,
    // An agent this change may free takes the queue's next ticket (lib/tickets/queue.ts): their freed entry, in
    // this commit, so a change that lands is always followed by their turn.
    items: [...freedItems(accountId, freedByTicketChange(before, after)), ...ruleItems(accountId, applied)],
    busyCondition: applied.picked,
    place: change.place,
    // The version the update writes (updateTicketItems returns it): the answer carries it as its ETag.
    attachment: change.attach?.({ entity: after, version: version + 1 }),
    event: withRuleEvents(
      [
        ...breachEvents(after, change.lost, version + 1),
        ...(change.shown === false
          ? []
          : [updatedEvent('ticket', presentCreatedTicket(before), presentCreatedTicket(after), version + 1)]),
      ],
      applied,
    ),
  });
}

/** The freed entry of the agent a change frees, due at once (none: nothing). */
export function freedItems(accountId: string, agentId: number | undefined) {
  return agentId === undefined ? [] : [freedAction(accountId, agentId, Math.floor(nowMicros() / 1000))];
}
