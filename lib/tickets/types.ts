import { createHash } from 'node:crypto';
import type { Priority } from '#lib/accounts/types.ts';
import type { Timestamp } from '#lib/time.ts';

export const TICKET_STATUSES = ['open', 'pending', 'in_progress', 'resolved', 'closed'] as const;
export type TicketStatus = (typeof TICKET_STATUSES)[number];

/** Statuses in which a ticket keeps its agent busy (least-busy assignment). */
export const BUSY_STATUSES: readonly TicketStatus[] = ['open', 'pending', 'in_progress'];

export const CHANNELS = ['api', 'email', 'phone', 'chat', 'web', 'widget'] as const;
export type Channel = (typeof CHANNELS)[number];

export type CustomFieldValue = string | number | boolean | null;

export interface Ticket {
  uuid: string;
  number: number;
  reference: string;
  subject: string;
  description: string;
  status: TicketStatus;
  priority: Priority;
  category: { id: number; name: string; slug: string } | null;
  channel: Channel;
  requester: {
    type: 'email';
    name: string | null;
    email: string;
    phone: string | null;
    contactId: number | null;
    clientId: number | null;
  };
  assignee: { id: number; name: string; email: string } | null;
  team: { id: number; name: string } | null;
  parentUuid: string | null;
  customFields: Record<string, CustomFieldValue>;
  tags: string[];
  dueAt: Timestamp | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  resolvedAt: Timestamp | null;
  closedAt: Timestamp | null;
}

/**
 * A custom field value in its JSON text form, as the list filter compares it (decisions.md):
 * strings as they are, everything else as JSON (`3`, `true`, `null`).
 */
export function customFieldText(value: CustomFieldValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * Dimensions a ticket is listed under; each has a posting list (newest first) and an exact counter.
 * `all` lists every ticket.
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

/** Dimensions whose counter lives in the account's ticket-stats item (bounded in number). */
export function isStatsDimension(d: string): boolean {
  return d === 'all' || d.startsWith('status#') || d.startsWith('priority#') || d.startsWith('assignee#');
}
