import { presentImportedFrom } from '#lib/imports/imported-from.ts';
import { nowMicros } from '#lib/time.ts';
import { conversationOf } from './conversation.ts';
import { presentSla } from './sla-clocks.ts';
import type { Ticket } from './types.ts';

function common(t: Ticket) {
  return {
    uuid: t.uuid,
    reference: t.reference,
    subject: t.subject,
    description: t.description,
    status: t.status,
    priority: t.priority,
    category: t.category ? { name: t.category.name, slug: t.category.slug } : null,
    channel: t.channel,
    imported_from: presentImportedFrom(t.importedFrom),
  };
}

function timestamps(t: Ticket) {
  return {
    custom_fields: t.customFields,
    tags: t.tags,
    due_at: t.dueAt,
    created_at: t.createdAt,
    updated_at: t.updatedAt,
    resolved_at: t.resolvedAt,
    closed_at: t.closedAt,
    // A ticket stored before the field: its last change, at or after its last status change (as time rules read it).
    status_changed_at: t.statusChangedAt ?? t.updatedAt,
    ...conversationFields(t),
    sla: presentSla(t, nowMicros()),
  };
}

/** The ticket of a create response: the full requester object and parent_uuid. */
export function presentCreatedTicket(t: Ticket) {
  return {
    ...common(t),
    requester: {
      type: t.requester.type,
      name: t.requester.name,
      email: requesterEmail(t),
      phone: t.requester.phone,
      contact_id: t.requester.contactId,
      client_id: t.requester.clientId,
      ...(t.requester.erased ? { erased: true } : {}),
    },
    assignee: t.assignee,
    team: t.team,
    organization: t.organization ?? null,
    parent_uuid: t.parentUuid,
    ...timestamps(t),
  };
}

/** A list item: requester reduced to name and e-mail, no parent_uuid. */
export function presentListedTicket(t: Ticket) {
  return {
    ...common(t),
    requester: {
      name: t.requester.name,
      email: requesterEmail(t),
      ...(t.requester.erased ? { erased: true } : {}),
    },
    assignee: t.assignee,
    team: t.team,
    organization: t.organization ?? null,
    ...timestamps(t),
  };
}

/** The requester's address, null once the requester was erased (decisions.md, "Deleting, restoring and erasing"). */
const requesterEmail = (t: Ticket) => (t.requester.erased ? null : t.requester.email);

/** The conversation's public fields: last_message_at and waiting_since (the clocks' own are inside `sla`). */
function conversationFields(t: Ticket) {
  const { lastMessageAt, waitingSince } = conversationOf(t);
  return { last_message_at: lastMessageAt, waiting_since: waitingSince };
}
