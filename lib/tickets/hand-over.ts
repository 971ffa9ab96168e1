import type { AccountConfig, Agent } from '#lib/accounts/types.ts';
import {
  type BusyCondition,
  findTicketPage,
  getTicketByUuid,
  updateTicketItems,
} from '#lib/data/tickets/tickets.ts';
import { updatedEvent } from '#lib/events/drafts.ts';
import { logError } from '#lib/log.ts';
import { momentKeeper } from '#lib/rules/in-change.ts';
import { nowMicros } from '#lib/time.ts';
import { applyChange } from './apply-change.ts';
import { presentCreatedTicket } from './present.ts';
import { isWaiting, type Ticket } from './types.ts';

/**
 * The queue's hand-over of one waiting ticket (docs/decisions.md, "The queue"), what an agent's turn (./queue.ts)
 * and a team wake's (./team-wake.ts) share: a queue's head, and the ticket to an agent through the ticket update
 * path, guarded by the version read and a condition on the agent's cell.
 */

/** Failed commits in a row (a race lost) before a turn gives up and leaves its entry for the next pass. */
const FAILURES_LIMIT = 5;

/**
 * A hand-over tried: true when it landed; false when it failed (logged), the `failures`-th in a row, and the turn
 * reads again; FAILURES_LIMIT of them in a row: thrown, and the runner moves the entry on.
 */
export async function handedOver(
  accountId: string,
  config: AccountConfig,
  agent: Agent,
  head: Ticket,
  condition: BusyCondition | undefined,
  failures: number,
): Promise<boolean> {
  try {
    await handOver(accountId, config, agent, head, condition);
    return true;
  } catch (error) {
    if (failures >= FAILURES_LIMIT) throw error;
    logError(error);
    return false;
  }
}

/** The head of one queue (a team's; null: the account's), when it is a ticket an agent can take. */
export async function queueHeadOf(accountId: string, teamId: number | null): Promise<Ticket | undefined> {
  const page = await findTicketPage(accountId, {
    filter: { unassigned: { teamId: teamId ?? 'none' }, customFields: [] },
    words: [],
    offset: 0,
    limit: 1,
    sort: 'queue',
  });
  const ticket = page.tickets[0];
  return ticket && isWaiting(ticket) ? ticket : undefined;
}

/**
 * The head to the agent, guarded by the version of the ticket read and `condition` on the agent's cell, with its
 * next time-rule moment in the same commit (the assignee and updated_at a rule may read moved: momentKeeper).
 */
async function handOver(
  accountId: string,
  config: AccountConfig,
  agent: Agent,
  head: Ticket,
  condition: BusyCondition | undefined,
) {
  const [stored, moment] = await Promise.all([
    getTicketByUuid(accountId, head.uuid),
    momentKeeper(accountId, config),
  ]);
  if (!stored || !isWaiting(stored.entity)) throw new Error(`ticket ${head.uuid} left the queue meanwhile`);
  const before = stored.entity;
  const assignee = { id: agent.id, name: agent.name, email: agent.email };
  const after = moment(applyChange(before, { assignee_id: agent.id }, { assignee }, config, nowMicros()));
  await updateTicketItems({
    accountId,
    before,
    after,
    version: stored.version,
    busyCondition: condition,
    event: updatedEvent(
      'ticket',
      presentCreatedTicket(before),
      presentCreatedTicket(after),
      stored.version + 1,
    ),
  });
}
