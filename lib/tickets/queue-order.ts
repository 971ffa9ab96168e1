import { PRIORITIES } from '#lib/accounts/types.ts';
import { parseTimestamp } from '#lib/time.ts';
import { isWaiting, type Ticket } from './types.ts';

/**
 * A queue's order (decisions.md, "People": urgent, high, medium, low, then the oldest `created_at`) as a sort
 * value compared as a string: waiting tickets (open, pending, in progress) first, so the head of a team's queue
 * is always one an agent can take and a resolved unassigned ticket never stands before it; then the priority's
 * rank, the creation time and the number (the tie-break of two tickets created in the same microsecond), padded.
 */
export function queueSortValue(
  ticket: Pick<Ticket, 'assignee' | 'status' | 'priority' | 'createdAt' | 'number'>,
) {
  const rank = PRIORITIES.length - 1 - PRIORITIES.indexOf(ticket.priority);
  const created = String(parseTimestamp(ticket.createdAt)).padStart(17, '0');
  return `${isWaiting(ticket) ? 0 : 1}${rank}${created}${String(ticket.number).padStart(10, '0')}`;
}
