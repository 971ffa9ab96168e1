import { isDeepStrictEqual } from 'node:util';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig, Category } from '#lib/accounts/types.ts';
import { TeamGone } from '#lib/data/people/people.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { UpdateTooLarge } from '#lib/data/store/errors.ts';
import { freedAction } from '#lib/data/tickets/freed.ts';
import { updateTicketItems } from '#lib/data/tickets/tickets.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { updatedEvent } from '#lib/events/drafts.ts';
import { organizationOfId, withCurrentName } from '#lib/organizations/refs.ts';
import type { OrganizationRef } from '#lib/organizations/types.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { firstReadBeside, updateVersioned, type Versioned } from '#lib/versioned-update.ts';
import { breachEvents, withLostBreaches } from './breaches.ts';
import { findTicket } from './get-ticket.ts';
import { presentCreatedTicket } from './present.ts';
import { freedByTicketChange } from './queue.ts';
import { MAX_CUSTOM_FIELDS, type UpdateTicketInput, UpdateTicketSchema } from './schemas.ts';
import { retargeted } from './sla.ts';
import type { ClockState } from './sla-clocks.ts';
import { statusMove } from './status-move.ts';
import { againIfTeamGone } from './team-gone.ts';
import { BUSY_STATUSES, type Ticket } from './types.ts';

export interface UpdateOptions {
  /** The If-Match header as sent, if any. */
  ifMatch?: string | undefined;
  /** What to write with the change, for the ticket as it is about to be stored (the HTTP stack's kept answer). */
  attach?: ((stored: Versioned<Ticket>) => CommitAttachment) | undefined;
}

/**
 * The `updateTicket` route. Reads the ticket (1 round trip by uuid, 2 by reference), applies the change
 * (status rules, SLA, references checked against the account) and writes ticket and index in one transaction
 * guarded by the version read (1 round trip). Another update landing in between: with If-Match, 412; without,
 * the change is applied again to the ticket as it now is. A change that changes nothing writes nothing. One that
 * met its team's deletion is decided again (againIfTeamGone).
 */
export async function updateTicket(
  accountId: string,
  ref: string,
  body: unknown,
  options: UpdateOptions = {},
): Promise<Versioned<Ticket>> {
  return againIfTeamGone(accountId, () => updateTicketOnce(accountId, ref, body, options)).catch(
    (error: unknown) => {
      // The team named was deleted since this change read it: as the same request sent now would answer.
      if (error instanceof TeamGone) throw ValidationFailed.field('team_id', TEAM_INVALID);
      throw error;
    },
  );
}

async function updateTicketOnce(
  accountId: string,
  ref: string,
  body: unknown,
  options: UpdateOptions,
): Promise<Versioned<Ticket>> {
  const input = parseInput(UpdateTicketSchema, body);
  // The current configuration waits for the request's rate count: the ticket's first read runs beside it.
  const read = firstReadBeside(() => findTicket(accountId, ref));
  // The organization named (a 422 when it is not the account's), read beside the ticket's first read.
  const organization =
    input.organization_id !== undefined ? organizationOfId(accountId, input.organization_id) : undefined;
  organization?.catch(() => undefined);
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const changes = resolveReferences(config, input);

  // The breaches the change would lose (a passed due time moved by a priority or category change): written in
  // its commit (lib/tickets/breaches.ts, withLostBreaches).
  let lost: ClockState[] = [];
  const updated = await updateVersioned({
    read: async () => {
      const [found, named] = await Promise.all([read(), organization]);
      if (named !== undefined) changes.organization = named;
      // A ticket keeping its organization is written (and answered) with its name as it is now.
      return found && named === undefined ? withCurrentName(accountId, found) : found;
    },
    apply: (before) => {
      if (before.status === 'closed') {
        throw ValidationFailed.field('status', 'A closed ticket cannot be changed.');
      }
      const nowUs = nowMicros();
      const settled = withLostBreaches(before, applyChange(before, input, changes, config, nowUs), nowUs);
      lost = settled.clocks;
      return settled.ticket;
    },
    write: async (before, after, version) => {
      try {
        return await updateTicketItems({
          accountId,
          before,
          after,
          version,
          // An agent this change may free takes the queue's next ticket (lib/tickets/queue.ts): their freed
          // entry, in this commit, so a change that lands is always followed by their turn.
          items: freedItems(accountId, freedByTicketChange(before, after)),
          // The version the update writes (updateTicketItems returns it): the answer carries it as its ETag.
          attachment: options.attach?.({ entity: after, version: version + 1 }),
          event: [
            ...breachEvents(after, lost, version + 1),
            updatedEvent('ticket', presentCreatedTicket(before), presentCreatedTicket(after), version + 1),
          ],
        });
      } catch (error) {
        if (error instanceof UpdateTooLarge) {
          throw ValidationFailed.field(
            input.custom_fields ? 'custom_fields' : 'subject',
            'The update changes too many custom fields and subject words at once: send it in two updates.',
          );
        }
        throw error;
      }
    },
    ifMatch: options.ifMatch,
    changedMessage: 'The ticket has changed since you read it (If-Match does not match its ETag).',
  });
  return updated;
}

const TEAM_INVALID = 'The selected team id is invalid.';

interface ResolvedChanges {
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

/** The freed entry of the agent a change frees, due at once (none: nothing). */
export function freedItems(accountId: string, agentId: number | undefined) {
  return agentId === undefined ? [] : [freedAction(accountId, agentId, Math.floor(nowMicros() / 1000))];
}
