import type { Ticket, TicketStatus } from './types.ts';

/**
 * The fields a status change sets (decisions.md): entering `resolved` sets resolved_at; leaving it for open,
 * pending or in_progress clears it (a reopen); entering `closed` sets closed_at, and resolved_at if it was null.
 * Pure, in a file of its own so that a PATCH (update-ticket.ts) and a rule's `set status` (lib/rules/) move a
 * status by the same rule without the rules importing the update's store calls. Every move sets `statusChangedAt`
 * (a time rule's `status_changed_at`).
 */
export function statusMove(before: Ticket, status: TicketStatus, now: string): Partial<Ticket> {
  if (status === 'resolved') return { status, resolvedAt: now, statusChangedAt: now };
  if (status === 'closed') {
    return { status, closedAt: now, resolvedAt: before.resolvedAt ?? now, statusChangedAt: now };
  }
  return { status, resolvedAt: null, statusChangedAt: now };
}
