import { type BusyCondition, updateTicketItems } from '#lib/data/tickets/tickets.ts';
import { updatedEvent } from '#lib/events/drafts.ts';
import { momentKeeper } from '#lib/rules/in-change.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { presentCreatedTicket } from './present.ts';
import type { Ticket } from './types.ts';

/**
 * A change a runner makes to a ticket after the fact (an organization's clearing, a hand-back): the ticket as
 * `change` makes it, `updated_at` now and its next time-rule moment over the rules cache (momentKeeper: what a rule
 * reads may have moved), in one commit guarded by the version read (StaleVersion when another change
 * landed first), with its `ticket.updated`; `busyCondition`, what a new assignee's cell must still hold (a
 * hand-back's re-assignment, as a create's pick: ConcurrentWrite when it no longer does).
 */
export async function commitFollowUp(
  accountId: string,
  stored: { entity: Ticket; version: number },
  change: (ticket: Ticket) => Ticket,
  busyCondition?: BusyCondition,
): Promise<void> {
  const { entity: before, version } = stored;
  const moment = await momentKeeper(accountId);
  const after = moment({ ...change(before), updatedAt: formatTimestamp(nowMicros()) });
  await updateTicketItems({
    accountId,
    before,
    after,
    version,
    busyCondition,
    event: updatedEvent('ticket', presentCreatedTicket(before), presentCreatedTicket(after), version + 1),
  });
}

/**
 * commitFollowUp's change of each of several tickets, each with its `ticket.updated`, as updateTicketsTogether
 * writes them in one commit (and ticketsFitTogether counts them): for changes without a busy condition. `moment`:
 * the caller's momentKeeper, read once for them all.
 */
export function followUps(
  changes: { stored: { entity: Ticket; version: number }; change: (ticket: Ticket) => Ticket }[],
  moment: (ticket: Ticket) => Ticket,
) {
  const updatedAt = formatTimestamp(nowMicros());
  return changes.map(({ stored: { entity: before, version }, change }) => {
    const after = moment({ ...change(before), updatedAt });
    const event = updatedEvent(
      'ticket',
      presentCreatedTicket(before),
      presentCreatedTicket(after),
      version + 1,
    );
    return { before, after, version, event };
  });
}
