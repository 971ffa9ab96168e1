import type { Priority } from '#lib/accounts/types.ts';
import {
  customFieldKey,
  type ImportErrorRow,
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

/**
 * Zendesk's objects in deskpipe's terms (spec/decisions.md, "Imports: moving a helpdesk in"; docs/imports.md,
 * "Zendesk"): pure, so the vocabulary of statuses, priorities and fields is translated here and nowhere else. What
 * cannot be mapped is an error row (its type, its Zendesk id, why), never a thrown error.
 */

type Json = Record<string, unknown>;
export type Mapped<T> = { value: T } | { error: ImportErrorRow } | { skip: true };

export const asObject = (value: unknown): Json | null =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null;
export const asObjects = (value: unknown): Json[] =>
  Array.isArray(value) ? value.map(asObject).filter((item): item is Json => item !== null) : [];
/** A Zendesk id (a number in its JSON) as a source id. */
export const idOf = (value: unknown): string | null =>
  typeof value === 'number' && Number.isSafeInteger(value)
    ? String(value)
    : typeof value === 'string' && value !== ''
      ? value
      : null;
const textOf = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** An ISO time of the API as a timestamp; null when it names no instant, or one before 1970. */
export function zendeskTime(value: unknown): Timestamp | null {
  const us = typeof value === 'string' ? parseInstant(value) : undefined;
  return us === undefined || us < 0 ? null : formatTimestamp(us);
}

export const STATUSES: Record<string, TicketStatus> = {
  new: 'open',
  open: 'open',
  pending: 'pending',
  hold: 'in_progress',
  solved: 'resolved',
  closed: 'closed',
};

/** null (no priority at the source): the account's default. */
export const PRIORITIES: Record<string, Priority> = {
  low: 'low',
  normal: 'medium',
  high: 'high',
  urgent: 'urgent',
};

const failed = (type: ImportErrorRow['type'], sourceId: string | null, reason: string) => ({
  error: { type, sourceId: sourceId ?? 'unknown', reason },
});

/** An agent or admin: suspended (or deleted) at the source, imported inactive. */
export function mapAgent(user: Json, teamSourceIds: string[]): Mapped<ImportedAgent> {
  const sourceId = idOf(user.id);
  const email = textOf(user.email);
  if (!sourceId) return failed('agents', null, 'the user has no id');
  if (!email) return failed('agents', sourceId, 'the agent has no e-mail address');
  const active = user.active !== false && user.suspended !== true;
  return { value: { sourceId, email, name: textOf(user.name) ?? email, active, teamSourceIds } };
}

export function mapTeam(group: Json): Mapped<ImportedTeam> {
  const sourceId = idOf(group.id);
  if (!sourceId) return failed('teams', null, 'the group has no id');
  if (group.deleted === true) return { skip: true };
  const name = textOf(group.name);
  if (!name) return failed('teams', sourceId, 'the group has no name');
  return { value: { sourceId, name } };
}

export function mapOrganization(organization: Json): Mapped<ImportedOrganization> {
  const sourceId = idOf(organization.id);
  if (!sourceId) return failed('organizations', null, 'the organization has no id');
  const name = textOf(organization.name);
  if (!name) return failed('organizations', sourceId, 'the organization has no name');
  const domains = Array.isArray(organization.domain_names)
    ? organization.domain_names.filter((domain): domain is string => typeof domain === 'string')
    : [];
  return { value: { sourceId, name, domains } };
}

/** An end user of the user export; agents (read in their own phase) and deleted users are skipped. */
export function mapContact(user: Json): Mapped<ImportedContact> {
  const sourceId = idOf(user.id);
  if (!sourceId) return failed('contacts', null, 'the user has no id');
  if (user.role !== 'end-user' || user.active === false) return { skip: true };
  const email = textOf(user.email);
  if (!email) return failed('contacts', sourceId, 'the end user has no e-mail address');
  return {
    value: {
      sourceId,
      email,
      name: textOf(user.name),
      phone: textOf(user.phone),
      organizationSourceId: idOf(user.organization_id),
    },
  };
}

/** What a ticket's mapping needs besides the ticket: field titles, solved times, its comments and their authors. */
export interface TicketContext {
  /** Custom field id → title (ticket_fields). */
  fieldTitles: Map<string, string>;
  /** Ticket id → solved_at (the metric_sets sideload). */
  solvedAt: Map<string, unknown>;
  comments: Json[];
  /** User id → role (the comments' users sideload). */
  roles: Map<string, string>;
}

export function mapTicket(
  ticket: Json,
  context: TicketContext,
): { mapped: Mapped<ImportedTicket>; errors: ImportErrorRow[] } {
  const errors: ImportErrorRow[] = [];
  const sourceId = idOf(ticket.id);
  if (!sourceId) return { mapped: failed('tickets', null, 'the ticket has no id'), errors };
  const status = STATUSES[String(ticket.status)];
  if (ticket.status === 'deleted') return { mapped: { skip: true }, errors };
  if (!status)
    return { mapped: failed('tickets', sourceId, `unknown status ${String(ticket.status)}`), errors };
  const createdAt = zendeskTime(ticket.created_at);
  const updatedAt = zendeskTime(ticket.updated_at) ?? createdAt;
  if (!createdAt || !updatedAt)
    return { mapped: failed('tickets', sourceId, 'the ticket has no valid created_at'), errors };
  const priority = ticket.priority == null ? null : PRIORITIES[String(ticket.priority)];
  if (priority === undefined)
    return { mapped: failed('tickets', sourceId, `unknown priority ${String(ticket.priority)}`), errors };
  const solved = status === 'resolved' || status === 'closed';
  const messages: ImportedMessage[] = [];
  for (const comment of context.comments) {
    const message = mapComment(comment, context.roles);
    if ('value' in message) messages.push(message.value);
    else if ('error' in message) errors.push(message.error);
  }
  const via = asObject(asObject(ticket.via)?.source);
  return {
    errors,
    mapped: {
      value: {
        sourceId,
        subject: textOf(ticket.subject) ?? textOf(ticket.raw_subject) ?? '',
        status,
        priority,
        createdAt,
        updatedAt,
        resolvedAt: solved ? (zendeskTime(context.solvedAt.get(sourceId)) ?? updatedAt) : null,
        closedAt: status === 'closed' ? updatedAt : null,
        tags: Array.isArray(ticket.tags) ? ticket.tags.filter((tag) => typeof tag === 'string') : [],
        requester: {
          sourceId: idOf(ticket.requester_id),
          email: textOf(asObject(via?.from)?.address),
        },
        assigneeSourceId: idOf(ticket.assignee_id),
        teamSourceId: idOf(ticket.group_id),
        organizationSourceId: idOf(ticket.organization_id),
        customFields: customFieldsOf(ticket.custom_fields, context.fieldTitles),
        messages,
      },
    },
  };
}

/** Custom field values by their field's title made a key; a multi-select's values joined; unknown fields left out. */
export function customFieldsOf(values: unknown, titles: Map<string, string>): ImportedTicket['customFields'] {
  const fields: ImportedTicket['customFields'] = {};
  for (const field of asObjects(values)) {
    const title = titles.get(idOf(field.id) ?? '');
    if (!title) continue;
    const { value } = field;
    if (Array.isArray(value)) fields[customFieldKey(title)] = value.map(String).join(', ');
    else if (value === null || ['string', 'number', 'boolean'].includes(typeof value))
      fields[customFieldKey(title)] = value as string | number | boolean | null;
  }
  return fields;
}

/** A comment: private → internal; its author an agent or a contact by the sideloaded role; its Message-ID kept. */
export function mapComment(comment: Json, roles: Map<string, string>): Mapped<ImportedMessage> {
  const sourceId = idOf(comment.id);
  if (!sourceId) return failed('messages', null, 'the comment has no id');
  const createdAt = zendeskTime(comment.created_at);
  if (!createdAt) return failed('messages', sourceId, 'the comment has no valid time (or one before 1970)');
  const authorId = idOf(comment.author_id);
  const role = authorId ? roles.get(authorId) : undefined;
  const kind = role === 'end-user' ? 'contact' : role === 'agent' || role === 'admin' ? 'agent' : 'unknown';
  const system = asObject(asObject(comment.metadata)?.system);
  const messageId = textOf(system?.message_id)?.replace(/^\s*<|>\s*$/g, '') || null;
  const attachments: ImportedAttachment[] = [];
  for (const file of asObjects(comment.attachments)) {
    const id = idOf(file.id);
    const url = textOf(file.content_url);
    if (!id || !url) continue;
    attachments.push({
      sourceId: id,
      fileName: textOf(file.file_name) ?? id,
      contentType: textOf(file.content_type) ?? 'application/octet-stream',
      size: typeof file.size === 'number' ? file.size : null,
      url,
    });
  }
  return {
    value: {
      sourceId,
      author: { kind, sourceId: authorId },
      body: textOf(comment.plain_body) ?? textOf(comment.body) ?? '',
      internal: comment.public === false,
      createdAt,
      messageId,
      attachments,
    },
  };
}
