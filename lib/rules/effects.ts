import type { Ticket } from '#lib/tickets/types.ts';
import type { Directory, PendingMessage } from './actions.ts';
import type { FieldValue } from './fields.ts';
import { renderBody } from './placeholders.ts';

/**
 * What a change's rules (or a macro) leave besides the ticket itself: the fields they changed, by the names rules
 * use, and the notes and replies they write, rendered against the ticket as the change leaves it.
 */

/** A field a rule or macro changed, from what to what (ids for entities, the category's slug). */
export interface FieldChange {
  field: string;
  from: FieldValue;
  to: FieldValue;
}

const WRITTEN: [string, (t: Ticket) => FieldValue][] = [
  ['status', (t) => t.status],
  ['priority', (t) => t.priority],
  ['team_id', (t) => t.team?.id ?? null],
  ['assignee_id', (t) => t.assignee?.id ?? null],
  ['category', (t) => t.category?.slug ?? null],
  ['organization_id', (t) => t.organization?.id ?? null],
];

/** The fields that differ between two tickets, in a fixed order: tags, then custom fields by key. */
export function fieldChanges(from: Ticket, to: Ticket): FieldChange[] {
  const changes: FieldChange[] = [];
  for (const [field, read] of WRITTEN) {
    if (read(from) !== read(to)) changes.push({ field, from: read(from), to: read(to) });
  }
  if (from.tags.length !== to.tags.length || from.tags.some((t, i) => to.tags[i] !== t)) {
    changes.push({ field: 'tags', from: from.tags, to: to.tags });
  }
  const keys = [...new Set([...Object.keys(from.customFields), ...Object.keys(to.customFields)])].sort();
  for (const key of keys) {
    const was = from.customFields[key] ?? null;
    const now = to.customFields[key] ?? null;
    if (was !== now) changes.push({ field: `custom_fields.${key}`, from: was, to: now });
  }
  return changes;
}

/** A note or reply to write: by a rule (its id) or a macro (null). */
export interface WrittenMessage {
  ruleId: number | null;
  type: 'note' | 'reply';
  /** Placeholders filled. */
  body: string;
  /** Its author: the agent the action names, else the ticket's assignee; null: the system. */
  agentId: number | null;
}

/** Messages made final once the change is complete: `{{ticket.status}}` is the status after it. */
export function renderMessages(
  pending: readonly (PendingMessage & { ruleId: number | null })[],
  ticket: Ticket,
  directory: Directory,
): WrittenMessage[] {
  return pending.map((message) => {
    const agent = message.agentId === null ? undefined : directory.agent(message.agentId);
    return {
      ruleId: message.ruleId,
      type: message.type,
      body: renderBody(message.body, ticket, agent?.name ?? null),
      agentId: message.agentId ?? ticket.assignee?.id ?? null,
    };
  });
}
