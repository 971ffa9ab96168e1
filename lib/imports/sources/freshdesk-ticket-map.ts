/**
 * Freshdesk API v2 tickets in deskpipe's import terms (records.ts): status, priority, custom fields by their labels,
 * the description and conversations as messages, attachments. Pure, as freshdesk-map.ts.
 */
import type { Priority } from '#lib/accounts/types.ts';
import {
  customFieldKey,
  type ImportedAttachment,
  type ImportedMessage,
  type ImportedTicket,
} from '#lib/imports/records.ts';
import type { TicketStatus } from '#lib/tickets/types.ts';
import { type FreshdeskObject, fail, idOf, type Mapped, text, timeOf } from './freshdesk-map.ts';

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

/**
 * The ticket fields' labels by field name (`cf_gadget` → `Gadget`), from GET /api/v2/ticket_fields; a nested
 * field's levels below the first are its `dependent_fields`, each with its own name and label.
 */
export function customFieldLabels(
  fields: unknown,
  labels: Record<string, string> = {},
): Record<string, string> {
  for (const field of Array.isArray(fields) ? (fields as FreshdeskObject[]) : []) {
    const name = text(field.name);
    if (name && field.default !== true) labels[name] = text(field.label) ?? name;
    customFieldLabels(field.dependent_fields, labels);
  }
  return labels;
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

/** A body as plain text: Freshdesk's `…_text` version, else its HTML with the tags taken out (never markup). */
export function plainText(textVersion: unknown, html: unknown): string {
  return text(textVersion) ?? (text(html) ?? '').replace(/<[^>]*>?/g, '');
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
      body: plainText(conversation.body_text, conversation.body),
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

/** What a ticket is read from: the list's ticket (with `include=stats,requester`), its own read and conversations. */
export interface FreshdeskTicketParts {
  ticket: FreshdeskObject;
  /** GET /api/v2/tickets/{id}: the description (the list has it only at an extra credit) and its attachments. */
  details: FreshdeskObject;
  conversations: FreshdeskObject[];
}

/**
 * A ticket with its messages: the description first (by the requester, at the ticket's creation), then the
 * conversations oldest first. A conversation that cannot be mapped is left out with its reason in `skipped`, the
 * ticket kept (a conversation is never cut for one bad message).
 */
export function mapTicket(
  { ticket, details, conversations }: FreshdeskTicketParts,
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
    body: plainText(details.description_text, details.description),
    internal: false,
    createdAt,
    messageId: null,
    attachments: mapAttachments(details.attachments),
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
