import type { Ticket, TicketFilter, TicketStatus } from '#lib/tickets/types.ts';
import type { EventDraft, ReservedPlaces } from '../events.ts';
import type { StatsCondition } from '../index/commit-actions.ts';
import type { DueCursors } from '../index/due.ts';
import type { PageQuery } from '../index/list.ts';
import { newOrderedUuid } from '../index/order-key.ts';
import type { Pending } from '../index/pending.ts';
import { statsAttribute } from '../index/stats-cells.ts';
import { blockGroupOf } from '../keys.ts';
import { TeamGone } from '../people/people.ts';
import { type CommitAttachment, completionCommit } from '../requests/idempotency.ts';
import type { Versioned } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import { BUSY } from './counts.ts';
import { dimension, tickets } from './ticket-index.ts';

/**
 * Tickets in the store: the ticket index (lib/data/tickets/ticket-index.ts) declares how they are listed; the engine
 * (lib/data/index/) writes and reads them. What is left here is what only tickets have: the least-busy
 * condition, and the shapes the ticket domain speaks in.
 */
export { reserveTicketNumber } from './sequences.ts';

/** A new ticket's uuid: its creation time and number, so the uuid names its item (one GetItem by uuid). */
export const newTicketUuid = (createdUs: number, number: number) => newOrderedUuid(createdUs, number);

export * from './counts.ts';

/**
 * A commit that adds a ticket to a team's open work (a create into one, a team change, a reopen, a restore: lib/data/
 * trash/trash.ts) is refused on a deleted team's closed cell (TeamGone): only a cell the commit adds to is conditioned
 * (statsActions). A team deleted after the change decided never gets an open ticket: the change decides again on the
 * configuration as it is now (a reopen: to no team, reopenedIntoGoneTeam in lib/tickets/update-ticket.ts; a restore:
 * lib/trash/restore.ts).
 */
export const teamEntered = (after: Ticket) => (after.team ? () => new TeamGone() : undefined);

/**
 * A guarantee of automatic assignment, checked in the create transaction on the chosen agent's cell, so two creates
 * cannot both take an agent's last free place: least-busy, the agent's open work is still what the pick saw
 * (`seen`); a capacity under another method, it is still below it (`below`).
 */
export type BusyCondition = { chosen: number; seen: number } | { chosen: number; below: number };

export interface TicketWrite {
  accountId: string;
  ticket: Ticket;
  busyCondition?: BusyCondition | undefined;
  /** Written in the commit: the request's answer kept with its Idempotency-Key. */
  attachment?: CommitAttachment | undefined;
  /** Written in the commit: the change's event, at the place taken with the ticket's number. */
  event: EventDraft;
  /** Written in the commit after `event` (a follow-up's first message). */
  moreEvents?: EventDraft[] | undefined;
  /** Items written in the commit beside the ticket (an e-mail's Message-ID claim). */
  moreItems?: CommitAction[] | undefined;
  /** Taken with its number: its event's place, its pending item (lib/data/index/pending.ts). */
  place?: ReservedPlaces | undefined;
  pending?: Pending | undefined;
}

/**
 * Writes a ticket so that every reader sees all of it or none of it (docs/data-model.md, "All or nothing"). A
 * create lost to a concurrent one (a conflict, or the assignment's condition no longer holding) is a ConcurrentWrite;
 * one into a team deleted since it decided is TeamGone.
 */
export async function insertTicket(write: TicketWrite): Promise<void> {
  await tickets.create(write.accountId, write.ticket, {
    statsCondition: write.busyCondition && busyCondition(write.busyCondition),
    attach: [...(write.moreItems ?? []), ...completionCommit(write.attachment)],
    events: [write.event, ...(write.moreEvents ?? [])],
    closed: teamEntered(write.ticket),
    reserved: write.place,
    pending: write.pending,
  });
}

/**
 * The chosen agent's count is still the one seen, or still below their capacity (a missing counter is zero),
 * checked on the agent's own stats item (the `agent` family is unsharded for this): one clause on one small item
 * whatever the number of candidates, where a clause per candidate passed DynamoDB's 4 KB expression limit near 200
 * agents. Counts only grow between a pick and its commit when creates race, so the chosen agent is then still among
 * the least busy; one that fell meanwhile (a ticket resolved) may leave the pick one ticket off for that moment
 * (docs/decisions.md, "Least-busy under concurrency").
 */
function busyCondition(condition: BusyCondition): StatsCondition {
  const attribute = statsAttribute.counter(BUSY, String(condition.chosen));
  if ('below' in condition) {
    const expression = '(attribute_not_exists(#a) OR #a < :below)';
    return { attribute, expression, values: { ':below': condition.below } };
  }
  const { seen } = condition;
  const expression = seen === 0 ? '(attribute_not_exists(#a) OR #a = :seen)' : '#a = :seen';
  return { attribute, expression, values: { ':seen': seen } };
}

/** The ticket a uuid names (its order key is inside it: one GetItem), or undefined. */
export const getTicketByUuid = (accountId: string, uuid: string): Promise<Versioned<Ticket> | undefined> =>
  tickets.getByUuid(accountId, uuid);

/** The ticket with this number (its number term gives the order key: one Query, then one GetItem). */
export const getTicketByNumber = tickets.getByNumber;

/** A ticket's change: before and after, as the domain decided it, and the version `before` was read at. */
export interface TicketUpdate {
  accountId: string;
  before: Ticket;
  after: Ticket;
  version: number;
  /** Written in the commit: the request's answer (with the ticket's new version, its ETag) kept with its key. */
  attachment?: CommitAttachment | undefined;
  /** Written in the commit: the change's events. */
  event: EventDraft | EventDraft[];
  /** Written in the commit before the events: items the change adds beside the ticket (a message). */
  items?: CommitAction[] | undefined;
  /** Checked on the new assignee's cell in the commit (the queue's hand-over: still below their capacity). */
  busyCondition?: BusyCondition | undefined;
  /** Places taken for its events after the ticket was read (the due runner's: lib/tickets/due-reads.ts). */
  place?: ReservedPlaces | undefined;
  /** The create's pending item (lib/data/index/pending.ts), put with its number. */
  pending?: Pending | undefined;
}

/**
 * Applies a ticket's change and moves its index with it, in one transaction guarded by the version (StaleVersion
 * when another update landed first; UpdateTooLarge when its removals alone pass one transaction; TeamGone when it
 * adds the ticket to the open work of a team deleted since). Answers the new version.
 */
export async function updateTicketItems(update: TicketUpdate): Promise<number> {
  const { accountId, before, after, version } = update;
  return tickets.update(
    accountId,
    { before, after, version },
    {
      attach: [...(update.items ?? []), ...completionCommit(update.attachment)],
      events: Array.isArray(update.event) ? update.event : [update.event],
      closed: teamEntered(after),
      statsCondition: update.busyCondition && busyCondition(update.busyCondition),
      reserved: update.place,
    },
  );
}

/**
 * Changes of several tickets in one commit (the hand-back's page: lib/people/handback.ts; the moment sweep's, with
 * its check among the items: lib/rules/sweep.ts), each guarded by its version and with its own event, the stats
 * cells and blocks they share written once (lib/data/index/merge-plans.ts): StaleVersion when one of them changed
 * since it was read, ConcurrentWrite on a conflict (sent once: the caller retries fewer), UpdateTooLarge when they
 * do not fit one transaction (ticketsFitTogether: how many do). None carries a busy condition.
 */
export async function updateTicketsTogether(accountId: string, updates: TicketChange[]): Promise<void> {
  await tickets.updateTogether(accountId, updates.map(plannedChange));
}

/** How many of these changes, first to last, fit one commit of updateTicketsTogether. */
export function ticketsFitTogether(accountId: string, updates: TicketChange[]): number {
  return tickets.fitTogether(accountId, updates.map(plannedChange));
}

/**
 * Tickets ordered so that those changed together share the most items: those of one block in every dimension
 * (keys/index/postings.ts, blockGroupOf) side by side, so a commit of six consecutive tickets writes 3 blocks, not 12.
 */
export function inSharedBlockOrder<T>(items: T[], numberOf: (item: T) => number): T[] {
  const group = (item: T) => blockGroupOf(numberOf(item));
  return [...items].sort((a, b) => (group(a) < group(b) ? -1 : group(a) > group(b) ? 1 : 0));
}

type TicketChange = Pick<TicketUpdate, 'before' | 'after' | 'version' | 'event' | 'items'>;
const plannedChange = ({ before, after, version, event, items }: TicketChange) => ({
  change: { before, after, version },
  options: {
    events: Array.isArray(event) ? event : [event],
    closed: teamEntered(after),
    attach: items ?? [],
  },
});

/** One page of tickets, newest first, and the exact total (how each shape is read: lib/data/index/list.ts). */
export async function findTicketPage(
  accountId: string,
  query: PageQuery<TicketFilter>,
): Promise<{ total: number; tickets: Ticket[] }> {
  const { total, entities } = await tickets.findPage(accountId, query);
  return { total, tickets: entities };
}

/**
 * Tickets whose due entry (their soonest service-level due time still to watch) is at or before `nowMs`: the breach
 * runner's window, in each due shard a page from where its last window ended (lib/data/index/due.ts, dueWindow),
 * earliest first.
 */
export function dueTicketWindow(
  nowMs: number,
  shards: readonly number[],
  cursors: DueCursors,
  perShard?: number,
) {
  return tickets.dueWindow(nowMs, shards, cursors, perShard);
}

/** The ticket an order key names (a due entry's), with its version: one strongly consistent GetItem. */
export function getTicketByOrderKey(
  accountId: string,
  orderKey: string,
): Promise<Versioned<Ticket> | undefined> {
  return tickets.getByOrderKey(accountId, orderKey);
}

/** The tickets of a due window's entries, in their order (undefined where none): one BatchGetItem a hundred. */
export const getTicketsByOrderKeys = tickets.getManyByOrderKeys;

/**
 * The breach runner's commit: the ticket with its breaches written (which moves it into `sla=breached` and its
 * due entry on), and one `ticket.sla_breached` event per clock, in one transaction guarded by the version read:
 * a change committed since (a reply, a resolution) refuses it with StaleVersion, and the runner reads again.
 */
export async function commitBreaches(
  accountId: string,
  change: { before: Ticket; after: Ticket; version: number },
  events: EventDraft[],
  place?: ReservedPlaces,
): Promise<number> {
  return tickets.update(accountId, change, { events, reserved: place });
}

/**
 * A page of an organization's tickets, oldest first, each as stored (undefined: a posting no ticket holds, a
 * create in flight or a failed one's orphan): the clearing runner's finder (lib/organizations/clearing.ts).
 */
export function organizationTickets(accountId: string, organizationId: number, limit: number) {
  return tickets.oldestListed(accountId, dimension.organization(organizationId), { after: null, limit });
}

/** Deletes an organization's posting no ticket holds (organizationTickets found it, old enough to be an orphan). */
export function dropOrganizationTicket(accountId: string, organizationId: number, at: string) {
  return tickets.dropPosting(accountId, dimension.organization(organizationId), at);
}

/**
 * A page of an agent's tickets in one status, oldest first after `after` (an order key), each as stored: the
 * hand-back's finder (lib/people/handback.ts), read from the status-and-assignee queue. statusTickets: the
 * account's, from the status dimension (the moment sweep's: lib/rules/sweep.ts).
 */
type Page = { after: string | null; limit: number; before?: string | null; read?: boolean };
export const agentTickets = (accountId: string, agentId: number, status: TicketStatus, page: Page) =>
  tickets.oldestListed(accountId, dimension.queue(status, undefined, agentId), page);
export const statusTickets = (accountId: string, status: TicketStatus, page: Page) =>
  tickets.oldestListed(accountId, dimension.status(status), page);
