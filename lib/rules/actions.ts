import type { Priority } from '#lib/accounts/types.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import { MAX_CUSTOM_FIELDS } from '#lib/tickets/schemas.ts';
import { statusMove } from '#lib/tickets/status-move.ts';
import type { Ticket, TicketStatus } from '#lib/tickets/types.ts';
import { formatTimestamp } from '#lib/time.ts';
import { customKey } from './fields.ts';
import type { Action, Scalar } from './types.ts';

/**
 * Applying one action to a ticket (pure): what rules and macros do alike (decisions.md, "Business rules"). An
 * action that cannot apply is skipped with its reason (docs/rules.md, "Skipped actions"), never an error: the
 * change it rides on commits.
 */

/** The account's entities an action names, as they are now, and its assignment (`assignee_id: "auto"`). */
export interface Directory {
  team(id: number): { id: number; name: string } | undefined;
  /** Active agents only: an inactive one is gone for a rule as for a PATCH. */
  agent(id: number): { id: number; name: string; email: string } | undefined;
  category(slug: string): { id: number; name: string; slug: string } | undefined;
  organization(id: number): OrganizationRef | undefined;
  /** Who the account's assignment gives the ticket now (null: nobody available). Deterministic for a given input. */
  assign(ticket: Ticket): Ticket['assignee'];
}

export const SKIP_REASONS = [
  'automatic_mail',
  'replies_per_hour',
  'gone',
  'closed',
  'nobody_available',
  'too_many_tags',
  'too_many_custom_fields',
] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** A note or reply an action writes; its body rendered once the change is complete (placeholders.ts). */
export interface PendingMessage {
  type: 'note' | 'reply';
  body: string;
  agentId: number | null;
}

export interface ActionEnv {
  directory: Directory;
  nowUs: number;
  /** Why a reply may not be sent now (the loop guards), or null; called once per reply about to be written. */
  replyRefused(): SkipReason | null;
}

export type ActionResult =
  | { ticket: Ticket; message?: PendingMessage; skipped?: undefined }
  | { ticket: Ticket; message?: undefined; skipped: SkipReason };

const MAX_TAGS = 50;
const skip = (ticket: Ticket, skipped: SkipReason): ActionResult => ({ ticket, skipped });

export function applyAction(ticket: Ticket, action: Action, env: ActionEnv): ActionResult {
  if (ticket.status === 'closed') return skip(ticket, 'closed');
  switch (action.type) {
    case 'set':
      return setField(ticket, action.field, action.value, env);
    case 'add_tags':
      return addTags(ticket, action.tags);
    case 'remove_tags': {
      const gone = new Set(action.tags.map((t) => t.toLowerCase()));
      return { ticket: { ...ticket, tags: ticket.tags.filter((t) => !gone.has(t.toLowerCase())) } };
    }
    default: {
      if (action.agentId !== null && env.directory.agent(action.agentId) === undefined) {
        return skip(ticket, 'gone');
      }
      const refused = action.type === 'reply' ? env.replyRefused() : null;
      if (refused) return skip(ticket, refused);
      return { ticket, message: { type: action.type, body: action.body, agentId: action.agentId } };
    }
  }
}

function addTags(ticket: Ticket, tags: string[]): ActionResult {
  const next = [...ticket.tags];
  let full = false;
  for (const tag of tags) {
    if (next.some((t) => t.toLowerCase() === tag.toLowerCase())) continue;
    if (next.length >= MAX_TAGS) full = true;
    else next.push(tag);
  }
  if (full && next.length === ticket.tags.length) return skip(ticket, 'too_many_tags');
  return { ticket: { ...ticket, tags: next } };
}

function setField(ticket: Ticket, field: string, value: Scalar, env: ActionEnv): ActionResult {
  const { directory } = env;
  const id = typeof value === 'number' ? value : null;
  switch (field) {
    case 'status':
      return { ticket: withStatus(ticket, value as TicketStatus, env.nowUs) };
    case 'priority':
      return { ticket: { ...ticket, priority: value as Priority } };
    case 'team_id': {
      const team = id === null ? null : directory.team(id);
      return team === undefined ? skip(ticket, 'gone') : { ticket: { ...ticket, team } };
    }
    case 'assignee_id': {
      if (value === 'auto') {
        const assignee = directory.assign(ticket);
        return assignee === null ? skip(ticket, 'nobody_available') : { ticket: { ...ticket, assignee } };
      }
      const agent = id === null ? null : directory.agent(id);
      return agent === undefined ? skip(ticket, 'gone') : { ticket: { ...ticket, assignee: agent } };
    }
    case 'category': {
      const found = typeof value === 'string' ? directory.category(value) : null;
      if (found === undefined) return skip(ticket, 'gone');
      return {
        ticket: { ...ticket, category: found && { id: found.id, name: found.name, slug: found.slug } },
      };
    }
    case 'organization_id': {
      const organization = id === null ? null : directory.organization(id);
      return organization === undefined ? skip(ticket, 'gone') : { ticket: { ...ticket, organization } };
    }
    default:
      return setCustomField(ticket, customKey(field) as string, value);
  }
}

function setCustomField(ticket: Ticket, key: string, value: Scalar): ActionResult {
  const customFields = { ...ticket.customFields };
  if (value === null) delete customFields[key];
  else customFields[key] = value;
  if (Object.keys(customFields).length > MAX_CUSTOM_FIELDS) return skip(ticket, 'too_many_custom_fields');
  return { ticket: { ...ticket, customFields } };
}

/** A status set as a PATCH sets it (status-move.ts), and when it changed (a time rule's `status_changed_at`). */
function withStatus(ticket: Ticket, status: TicketStatus, nowUs: number): Ticket {
  if (status === ticket.status) return ticket;
  const now = formatTimestamp(nowUs);
  return { ...ticket, ...statusMove(ticket, status, now) };
}
