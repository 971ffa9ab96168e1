import { type ImportedFrom, PRIORITIES, type Priority } from '#lib/accounts/types.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import { parseTimestamp, type Timestamp } from '#lib/time.ts';
import type { KeptClocks, SlaBreaches, SlaTargets } from './sla-clocks.ts';

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
    /** The requester was erased (decisions.md): name, e-mail and phone are gone (the e-mail stored as ''). */
    erased?: boolean;
  };
  assignee: { id: number; name: string; email: string } | null;
  team: { id: number; name: string } | null;
  /**
   * The requester's organization, set at creation (decisions.md): its name as when the ticket was last written,
   * shown as it is now (lib/organizations/refs.ts). Absent on tickets stored before organizations: none.
   */
  organization?: OrganizationRef | null;
  parentUuid: string | null;
  customFields: Record<string, CustomFieldValue>;
  tags: string[];
  dueAt: Timestamp | null;
  createdAt: Timestamp;
  updatedAt: Timestamp;
  resolvedAt: Timestamp | null;
  closedAt: Timestamp | null;
  /**
   * When the status last changed (decisions.md, "Business rules": a time rule's `since`); a new ticket's
   * created_at. Absent on tickets stored before rules: lib/rules/time-rules.ts reads it as updatedAt.
   */
  statusChangedAt?: Timestamp;
  /** The times of the replies rules wrote on the ticket in the last hour (internal: the loop guard's 3 an hour). */
  ruleRepliesAt?: Timestamp[];
  /**
   * The ticket's next time-rule moment (internal; lib/rules/in-change.ts keeps it at every change, the runner at each
   * moment): its entry in the due index with the SLA clocks' (ticket-index.ts, `due`). Absent or null: none.
   */
  ruleDueAt?: Timestamp | null;
  /** The `since` value each time rule was last looked at with, by rule id (lib/rules/time-rules.ts, LookedCycles). */
  ruleCycles?: Record<string, Timestamp>;
  /**
   * The conversation's fields (lib/tickets/conversation.ts), written by every message in its commit. Absent on
   * tickets stored before messages existed: conversationOf() reads them as a ticket with its description only.
   */
  lastMessageAt?: Timestamp;
  waitingSince?: Timestamp | null;
  /** Internal (shown inside `sla` only): the first public agent message's time. */
  firstReplyAt?: Timestamp | null;
  /** Internal (shown inside `sla` only): the next-reply clock's current or last cycle. */
  replyCycle?: ReplyCycle | null;
  /** Messages in the conversation, the description included: the next message's number is one more. */
  messageCount?: number;
  /**
   * Service-level clocks (lib/tickets/sla-clocks.ts) read the conversation's fields above with the matched
   * policy's targets and the breaches the runner wrote. Absent on tickets stored before them: null.
   */
  slaTargets?: SlaTargets | null;
  slaBreaches?: SlaBreaches | null;
  /** The reply clocks a priority or category change found completed, with their due times (history). */
  slaKept?: KeptClocks | null;
  /** An imported ticket (lib/imports/tickets.ts): the source, its id there, the import that created it. */
  importedFrom?: ImportedFrom;
  /** The description's author when not the requester (an imported ticket opened by an agent or the system). */
  descriptionAuthor?: {
    type: 'agent' | 'requester' | 'system';
    agentId: number | null;
    name: string | null;
    email: string | null;
  };
  /**
   * A ticket opened by e-mail: its description's mail fields (lib/tickets/messages/message.ts, MailFields); an
   * imported ticket's description with attachments has them here too, without `email` when it was no mail.
   */
  descriptionEmail?: {
    email?: Record<string, unknown>;
    attachments: Record<string, unknown>[];
    source?: { inboundId: string; rawKey: string };
  };
}

/** A cycle of the next-reply clock: started by a requester's message, completed by the agent's next reply. */
export interface ReplyCycle {
  startedAt: Timestamp;
  completedAt: Timestamp | null;
}

/**
 * A custom field value in its JSON text form, as the list filter compares it (decisions.md):
 * strings as they are, everything else as JSON (`3`, `true`, `null`).
 */
export function customFieldText(value: CustomFieldValue): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Whether a ticket counts toward its assignee's open work (least-busy assignment). */
/** Waiting in a queue: unassigned and in open, pending or in_progress (what an agent would take on). */
export function isWaiting(ticket: Pick<Ticket, 'assignee' | 'status'>): boolean {
  return ticket.assignee === null && BUSY_STATUSES.includes(ticket.status);
}

export function isOpenWork(ticket: Pick<Ticket, 'assignee' | 'status'>): boolean {
  return ticket.assignee !== null && BUSY_STATUSES.includes(ticket.status);
}

/** The list filters (decisions.md, "Ticket list"), combined with AND. */
export interface TicketFilter {
  status?: TicketStatus;
  priority?: Priority;
  assigneeId?: number;
  /**
   * `assignee=unassigned`: no assignee; with `teamId`, of that team (`team_id=none`: of none). A team's queue
   * (decisions.md, "People"): `sort=queue` lists it in the order it is served.
   */
  unassigned?: { teamId?: number | 'none' };
  organizationId?: number;
  requesterEmail?: string;
  /** `sla=breached`: a clock's breach was written and the clock is still running. */
  slaBreached?: boolean;
  /** `custom_fields[key]=text`: the field's JSON text form (customFieldText) equals text. */
  customFields: [key: string, text: string][];
}

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
