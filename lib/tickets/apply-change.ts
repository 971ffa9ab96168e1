import { isDeepStrictEqual } from 'node:util';
import type { AccountConfig, Category } from '#lib/accounts/types.ts';
import { ValidationFailed } from '#lib/errors.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import { formatTimestamp } from '#lib/time.ts';
import { MAX_CUSTOM_FIELDS, type UpdateTicketInput } from './schemas.ts';
import { retargeted } from './sla.ts';
import { statusMove } from './status-move.ts';
import { BUSY_STATUSES, type Ticket } from './types.ts';

/**
 * A ticket's change as a PATCH decides it, pure: the ids checked against the account, the fields applied with their
 * status times, SLA targets and updated_at. A PATCH (update-ticket.ts), a message's status (messages/ticket-after.ts),
 * a hand-over, and a change's rules (lib/rules/ticket-effects.ts) all change a ticket through it.
 */

export const TEAM_INVALID = 'The selected team id is invalid.';

export interface ResolvedChanges {
  organization?: OrganizationRef | null;
  assignee?: Ticket['assignee'];
  team?: Ticket['team'];
  category?: Category | null;
}

/** The ids of the change, checked against the account: an active agent, a team, a category. */
export function resolveReferences(config: AccountConfig, input: UpdateTicketInput): ResolvedChanges {
  const changes: ResolvedChanges = {};
  if (input.assignee_id !== undefined) {
    const agent =
      input.assignee_id === null ? null : config.agents.find((a) => a.id === input.assignee_id && a.active);
    if (agent === undefined)
      throw ValidationFailed.field('assignee_id', 'The selected assignee id is invalid.');
    changes.assignee = agent && { id: agent.id, name: agent.name, email: agent.email };
  }
  if (input.team_id !== undefined) {
    const team = input.team_id === null ? null : config.teams.find((t) => t.id === input.team_id);
    if (team === undefined) throw ValidationFailed.field('team_id', TEAM_INVALID);
    changes.team = team && { id: team.id, name: team.name };
  }
  if (input.category_id !== undefined) {
    const category =
      input.category_id === null ? null : config.categories.find((c) => c.id === input.category_id);
    if (category === undefined)
      throw ValidationFailed.field('category_id', 'The selected category id is invalid.');
    changes.category = category;
  } else if (input.category_slug !== undefined) {
    const category =
      input.category_slug === null ? null : config.categories.find((c) => c.slug === input.category_slug);
    if (category === undefined) {
      throw ValidationFailed.field('category_slug', 'The selected category slug is invalid.');
    }
    changes.category = category;
  }
  return changes;
}

/**
 * A ticket moved back into open work (open, pending, in_progress: from resolved or closed, or restored from the
 * trash) whose team was deleted meanwhile goes to the account's queue (no team): its team's queue is nobody's
 * (queuesFor lists the configuration's teams) and the deleted team holds no open ticket (docs/decisions.md).
 */
export function reopenedIntoGoneTeam(
  before: Pick<Ticket, 'status'> | undefined,
  after: Pick<Ticket, 'status' | 'team'>,
  config: Pick<AccountConfig, 'teams'>,
): boolean {
  const reopened = BUSY_STATUSES.includes(after.status) && !(before && BUSY_STATUSES.includes(before.status));
  const team = after.team;
  return reopened && team != null && !config.teams.some((t) => t.id === team.id);
}

/** The ticket after the change (pure): fields, status timestamps, SLA, updated_at when anything changed. */
export function applyChange(
  before: Ticket,
  input: UpdateTicketInput,
  changes: ResolvedChanges,
  config: AccountConfig,
  nowUs: number,
): Ticket {
  const now = formatTimestamp(nowUs);
  const after: Ticket = { ...before };
  if (input.subject !== undefined) after.subject = input.subject;
  if (input.description !== undefined) after.description = input.description;
  if (input.priority !== undefined) after.priority = input.priority;
  if (input.tags !== undefined) after.tags = input.tags;
  if (changes.assignee !== undefined) after.assignee = changes.assignee;
  if (changes.team !== undefined) after.team = changes.team;
  if (changes.organization === null) delete after.organization;
  else if (changes.organization !== undefined) after.organization = changes.organization;
  if (changes.category !== undefined) {
    after.category = changes.category && {
      id: changes.category.id,
      name: changes.category.name,
      slug: changes.category.slug,
    };
  }
  if (input.custom_fields !== undefined) {
    const merged: Ticket['customFields'] = { ...before.customFields };
    for (const [key, value] of Object.entries(input.custom_fields)) {
      if (value === null) delete merged[key];
      else merged[key] = value;
    }
    if (Object.keys(merged).length > MAX_CUSTOM_FIELDS) {
      throw ValidationFailed.field(
        'custom_fields',
        `The custom fields field must not have more than ${MAX_CUSTOM_FIELDS} items.`,
      );
    }
    after.customFields = merged;
  }
  if (input.status !== undefined && input.status !== before.status) {
    Object.assign(after, statusMove(before, input.status, now));
  }
  if (reopenedIntoGoneTeam(before, after, config)) after.team = null;
  // Every running clock's due time is counted again from its own start with the new policy's targets; a clock
  // completed by now (the status above applied) keeps its own.
  const changed =
    after.priority !== before.priority || after.category?.slug !== before.category?.slug
      ? retargeted(config.account, after, {
          priority: after.priority,
          categorySlug: after.category?.slug ?? null,
        })
      : after;
  if (!isDeepStrictEqual(changed, before)) changed.updatedAt = now;
  return changed;
}
