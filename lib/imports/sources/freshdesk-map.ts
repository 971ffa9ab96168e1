/**
 * Freshdesk API v2 objects in deskpipe's import terms (records.ts): pure, one function an object, each answering a
 * record or the reason it cannot be one (the reader makes that reason an error row; nothing here throws).
 * Shapes as developers.freshdesk.com documents them: ids are numbers, times `2015-08-24T11:56:51Z`.
 */
import type { Priority } from '#lib/accounts/types.ts';
import {
  customFieldKey,
  type ImportedAgent,
  type ImportedAttachment,
  type ImportedContact,
  type ImportedMessage,
  type ImportedOrganization,
  type ImportedTeam,
  type ImportedTicket,
} from '#lib/imports/records.ts';
import type { TicketStatus } from '#lib/tickets/types.ts';
import { formatTimestamp, parseInstant, type Timestamp } from '#lib/time.ts';

/** A Freshdesk object as JSON gives it: read field by field, never trusted. */
export type FreshdeskObject = Record<string, unknown>;

/** What a mapping answers: the record, or why it cannot be one. */
export type Mapped<T> = { ok: true; value: T } | { ok: false; reason: string };

const fail = (reason: string): { ok: false; reason: string } => ({ ok: false, reason });

/** Freshdesk's four statuses; custom statuses (6 and up) are all unresolved states there: open here. */
const STATUSES: Record<number, TicketStatus> = { 2: 'open', 3: 'pending', 4: 'resolved', 5: 'closed' };
const PRIORITY_OF: Record<number, Priority> = { 1: 'low', 2: 'medium', 3: 'high', 4: 'urgent' };

export function mapStatus(status: unknown): TicketStatus {
  return (typeof status === 'number' && STATUSES[status]) || 'open';
}

/** null: the account's default priority (a ticket without one, or with a value Freshdesk does not define). */
export function mapPriority(priority: unknown): Priority | null {
  return (typeof priority === 'number' && PRIORITY_OF[priority]) || null;
}

/** A source id: Freshdesk's numeric id as a string; null when absent. */
export function idOf(value: unknown): string | null {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (typeof value === 'string' && /^\d+$/.test(value)) return value;
  return null;
}

/** A Freshdesk time as the API's timestamp; undefined when it is not one (or before 1970). */
export function timeOf(value: unknown): Timestamp | undefined {
  if (typeof value !== 'string') return undefined;
  const us = parseInstant(value);
  return us === undefined || us < 0 ? undefined : formatTimestamp(us);
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** The ticket fields' labels by field name (`cf_gadget` → `Gadget`), from GET /api/v2/ticket_fields. */
export function customFieldLabels(fields: unknown): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const field of Array.isArray(fields) ? (fields as FreshdeskObject[]) : []) {
    const name = text(field.name);
    if (name && field.default !== true) labels[name] = text(field.label) ?? name;
  }
  return labels;
}

/** Agents' teams, from the groups' `agent_ids`. */
export function membershipsOf(groups: FreshdeskObject[]): Map<string, string[]> {
  const teams = new Map<string, string[]>();
  for (const group of groups) {
    const groupId = idOf(group.id);
    if (!groupId || !Array.isArray(group.agent_ids)) continue;
    for (const agent of group.agent_ids) {
      const agentId = idOf(agent);
      if (agentId) teams.set(agentId, [...(teams.get(agentId) ?? []), groupId]);
    }
  }
  return teams;
}

export function mapAgent(agent: FreshdeskObject, teams: Map<string, string[]>): Mapped<ImportedAgent> {
  const sourceId = idOf(agent.id);
  if (!sourceId) return fail('the agent has no id');
  const contact = (agent.contact ?? {}) as FreshdeskObject;
  const email = text(contact.email);
  if (!email) return fail('the agent has no e-mail address');
  return {
    ok: true,
    value: {
      sourceId,
      email,
      name: text(contact.name) || email,
      // An agent whose contact is not active (deactivated, or never verified) is imported inactive.
      active: contact.active === true,
      teamSourceIds: teams.get(sourceId) ?? [],
    },
  };
}

export function mapGroup(group: FreshdeskObject): Mapped<ImportedTeam> {
  const [sourceId, name] = [idOf(group.id), text(group.name)];
  if (!sourceId) return fail('the group has no id');
  return name ? { ok: true, value: { sourceId, name } } : fail('the group has no name');
}

export function mapCompany(company: FreshdeskObject): Mapped<ImportedOrganization> {
  const [sourceId, name] = [idOf(company.id), text(company.name)];
  if (!sourceId) return fail('the company has no id');
  if (!name) return fail('the company has no name');
  const domains = Array.isArray(company.domains)
    ? company.domains.filter((d): d is string => typeof d === 'string' && d.length > 0)
    : [];
  return { ok: true, value: { sourceId, name, domains } };
}

export function mapContact(contact: FreshdeskObject): Mapped<ImportedContact> {
  const sourceId = idOf(contact.id);
  if (!sourceId) return fail('the contact has no id');
  const email = text(contact.email);
  if (!email) return fail('the contact has no e-mail address');
  return {
    ok: true,
    value: {
      sourceId,
      email,
      name: text(contact.name),
      phone: text(contact.phone) || text(contact.mobile),
      organizationSourceId: idOf(contact.company_id),
    },
  };
}

export function mapAttachments(attachments: unknown): ImportedAttachment[] {
  if (!Array.isArray(attachments)) return [];
  return (attachments as FreshdeskObject[]).flatMap((a) => {
    const [sourceId, url] = [idOf(a.id), text(a.attachment_url)];
    if (!sourceId || !url) return [];
    const fileName = text(a.name) ?? `attachment-${sourceId}`;
    const contentType = text(a.content_type) ?? 'application/octet-stream';
    return [{ sourceId, fileName, contentType, size: typeof a.size === 'number' ? a.size : null, url }];
  });
}

/**
 * A conversation as a message: `private` is an internal note; `incoming` says the customer wrote it (a contact),
 * else an agent did; `user_id` is the author. Freshdesk's API gives no e-mail Message-ID: `messageId` is null.
 */
export function mapConversation(conversation: FreshdeskObject): Mapped<ImportedMessage> {
  const sourceId = idOf(conversation.id);
  if (!sourceId) return fail('the conversation has no id');
  const createdAt = timeOf(conversation.created_at);
  if (!createdAt) return fail(`conversation ${sourceId}: created_at is not a time after 1970`);
  const userId = idOf(conversation.user_id);
  return {
    ok: true,
    value: {
      sourceId,
      author: userId
        ? { kind: conversation.incoming === true ? 'contact' : 'agent', sourceId: userId }
        : { kind: 'unknown', sourceId: null },
      body: text(conversation.body_text) ?? text(conversation.body) ?? '',
      internal: conversation.private === true,
      createdAt,
      messageId: null,
      attachments: mapAttachments(conversation.attachments),
    },
  };
}

/** The custom fields a ticket has, keyed by their labels made keys; unknown field names keep their own name. */
export function mapCustomFields(
  values: unknown,
  labels: Record<string, string>,
): Record<string, string | number | boolean | null> {
  const fields: Record<string, string | number | boolean | null> = {};
  if (!values || typeof values !== 'object') return fields;
  for (const [name, value] of Object.entries(values as FreshdeskObject)) {
    const kept = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
    fields[customFieldKey(labels[name] ?? name)] = kept
      ? value
      : value === null
        ? null
        : JSON.stringify(value);
  }
  return fields;
}

/** What a ticket is read from: the list's ticket (with `include=description,stats,requester`) and its details. */
export interface FreshdeskTicketParts {
  ticket: FreshdeskObject;
  /** GET /api/v2/tickets/{id}: the description's attachments. */
  attachments: unknown;
  conversations: FreshdeskObject[];
}

/**
 * A ticket with its messages: the description first (by the requester, at the ticket's creation), then the
 * conversations oldest first. A conversation that cannot be mapped is left out with its reason in `skipped`, the
 * ticket kept (a conversation is never cut for one bad message).
 */
export function mapTicket(
  { ticket, attachments, conversations }: FreshdeskTicketParts,
  labels: Record<string, string>,
): Mapped<{ ticket: ImportedTicket; skipped: { sourceId: string; reason: string }[] }> {
  const sourceId = idOf(ticket.id);
  if (!sourceId) return fail('the ticket has no id');
  const [createdAt, updatedAt] = [timeOf(ticket.created_at), timeOf(ticket.updated_at)];
  if (!createdAt || !updatedAt) return fail('created_at or updated_at is not a time after 1970');
  const stats = (ticket.stats ?? {}) as FreshdeskObject;
  const requester = (ticket.requester ?? {}) as FreshdeskObject;
  const requesterId = idOf(ticket.requester_id);
  const description: ImportedMessage = {
    sourceId: `ticket-${sourceId}`,
    author: requesterId ? { kind: 'contact', sourceId: requesterId } : { kind: 'unknown', sourceId: null },
    body: text(ticket.description_text) ?? text(ticket.description) ?? '',
    internal: false,
    createdAt,
    messageId: null,
    attachments: mapAttachments(attachments),
  };
  const messages = [description];
  const skipped: { sourceId: string; reason: string }[] = [];
  for (const conversation of conversations) {
    const mapped = mapConversation(conversation);
    if (mapped.ok) messages.push(mapped.value);
    else skipped.push({ sourceId: idOf(conversation.id) ?? `ticket-${sourceId}`, reason: mapped.reason });
  }
  const tags = Array.isArray(ticket.tags)
    ? ticket.tags.filter((t): t is string => typeof t === 'string')
    : [];
  const value: ImportedTicket = {
    sourceId,
    subject: text(ticket.subject) ?? '',
    status: mapStatus(ticket.status),
    priority: mapPriority(ticket.priority),
    createdAt,
    updatedAt,
    resolvedAt: timeOf(stats.resolved_at) ?? null,
    closedAt: timeOf(stats.closed_at) ?? null,
    tags,
    requester: { sourceId: requesterId, email: text(requester.email) },
    assigneeSourceId: idOf(ticket.responder_id),
    teamSourceId: idOf(ticket.group_id),
    organizationSourceId: idOf(ticket.company_id),
    customFields: mapCustomFields(ticket.custom_fields, labels),
    messages,
  };
  return { ok: true, value: { ticket: value, skipped } };
}
