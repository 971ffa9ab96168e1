import { createHash } from 'node:crypto';
import { customFieldText, type Ticket, type TicketFilter } from '#lib/tickets/types.ts';
import { parseTimestamp } from '#lib/time.ts';
import { ticketKeys } from './keys.ts';

/**
 * How tickets are indexed: the dimensions a ticket is listed under (each has a posting list, newest first, and
 * an exact counter) and its order key. Only the data layer knows these; the domain speaks of tickets and
 * filters. See docs/data-model.md, "Tickets".
 */
export const dimension = {
  all: 'all',
  status: (status: string) => `status#${status}`,
  priority: (priority: string) => `priority#${priority}`,
  assignee: (id: number) => `assignee#${id}`,
  email: (email: string) => `email#${email.toLowerCase()}`,
  customField: (key: string, text: string) => `cf#${key}#${compactValue(text)}`,
};

/**
 * A key holds at most 2,048 bytes, and a custom field value up to 1,024 characters (4 KB in UTF-8): long values
 * are named in keys by their SHA-256 instead, which matches exactly the same tickets.
 */
const MAX_VALUE_BYTES_IN_KEY = 512;
function compactValue(text: string): string {
  if (Buffer.byteLength(text, 'utf8') <= MAX_VALUE_BYTES_IN_KEY) return text;
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/** Every dimension a ticket is listed under; `all` lists every ticket. */
export function dimensionsOf(ticket: Ticket): string[] {
  return [
    dimension.all,
    dimension.status(ticket.status),
    dimension.priority(ticket.priority),
    ...(ticket.assignee ? [dimension.assignee(ticket.assignee.id)] : []),
    dimension.email(ticket.requester.email),
    ...Object.entries(ticket.customFields).map(([key, value]) =>
      dimension.customField(key, customFieldText(value)),
    ),
  ];
}

/** The dimensions a filter names (none: every ticket). */
export function filterDimensions(q: TicketFilter): string[] {
  return [
    ...(q.status ? [dimension.status(q.status)] : []),
    ...(q.priority ? [dimension.priority(q.priority)] : []),
    ...(q.assigneeId !== undefined ? [dimension.assignee(q.assigneeId)] : []),
    ...(q.requesterEmail !== undefined ? [dimension.email(q.requesterEmail)] : []),
    ...q.customFields.map(([key, text]) => dimension.customField(key, text)),
  ];
}

/** Dimensions whose counter lives in the account's ticket-stats item (bounded in number). */
export function isStatsDimension(d: string): boolean {
  return d === 'all' || d.startsWith('status#') || d.startsWith('priority#') || d.startsWith('assignee#');
}

/** A ticket's order key: its creation time and number (newest first, the reference breaking ties). */
export function orderKeyOf(ticket: Pick<Ticket, 'createdAt' | 'number'>): string {
  return ticketKeys.orderKey(parseTimestamp(ticket.createdAt), ticket.number);
}
