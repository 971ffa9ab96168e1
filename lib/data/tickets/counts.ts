import type { TicketStatus } from '#lib/tickets/types.ts';
import type { CellReading } from '../index/closed-cells.ts';
import { statsAttribute } from '../index/stats-cells.ts';
import { COUNTER_SHARDS } from '../keys.ts';
import { StaleVersion } from '../store/errors.ts';
import type { CommitAction } from '../store/transact.ts';
import { AGENT, dimension, tickets } from './ticket-index.ts';

/** A ticket index's counts as the service reads them: totals, agents' open work, a team's open tickets. */

export interface TicketStats {
  /** Exact ticket counts of the bounded dimensions (`all`, `status#open`, `priority#high`, `assignee#3`). */
  counts: Record<string, number>;
  /** Open, pending and in-progress tickets per agent id. */
  busy: Record<string, number>;
}

export async function getTicketStats(accountId: string): Promise<TicketStats> {
  const { counts, counters } = await tickets.stats(accountId);
  return { counts, busy: counters[BUSY] ?? {} };
}

export const BUSY = 'busy';

/** Exact counts of the tickets in these statuses, in their order (the moment sweep's lanes: one round trip). */
export async function getStatusCounts(
  accountId: string,
  statuses: readonly TicketStatus[],
): Promise<number[]> {
  const counts = await tickets.counts(
    accountId,
    statuses.map((status) => dimension.status(status)),
  );
  return statuses.map((status) => counts[dimension.status(status)] ?? 0);
}

/**
 * Each agent's open work (least-busy's pick): the agent cells only, one Query of an item per agent (~85 B: ~21 read
 * units at 1,000 agents), not the counts cell's shards beside them.
 */
export async function getOpenWork(accountId: string): Promise<Record<string, number>> {
  return (await tickets.stats(accountId, [AGENT.family])).counters[BUSY] ?? {};
}

/** These agents' open work (a page of an agent list): their cells only, one BatchGetItem, whatever the account's size. */
export async function getOpenWorkOf(accountId: string, agentIds: number[]): Promise<Record<string, number>> {
  const cells = await tickets.statsCells(accountId, AGENT.family, agentIds.map(String));
  return cells.counters[BUSY] ?? {};
}

/** One agent's open work, from its own cell (one Query of one small item: what a lost pick reads again). */
export async function getAgentOpenWork(accountId: string, agentId: number): Promise<number> {
  return (await tickets.statsCell(accountId, AGENT.family, String(agentId))).counters[BUSY]?.[agentId] ?? 0;
}

const TEAM_OPEN = 'open';
const teamOpen = (teamId: number) => statsAttribute.counter(TEAM_OPEN, String(teamId));

/**
 * A team's open, pending and in-progress tickets, shard by shard (one Query of its cell's at most COUNTER_SHARDS
 * small items): what its deletion decides on and then closes (teamClosed).
 */
export function readTeamOpenTickets(accountId: string, teamId: number): Promise<CellReading> {
  return tickets.readCellAttribute(accountId, teamOpen(teamId));
}

/**
 * A team's deletion's part of its commit (COUNTER_SHARDS actions): the team's cell still as read (`reading`
 * counted none) and closed. A ticket that entered the team's open work since moved one of its shards and refuses
 * the deletion (StaleVersion: it reads again and answers the 409); one that commits after it is refused on its own
 * shard's mark (TeamGone). No item is written by every ticket entering the team: each adds to its own shard.
 */
export function teamClosed(accountId: string, reading: CellReading): CommitAction[] {
  return tickets.closeCell(accountId, reading, () => new StaleVersion());
}

/** The actions teamClosed takes, which a deletion's transaction holds beside its own (lib/people/teams.ts). */
export const TEAM_CLOSE_ACTIONS = COUNTER_SHARDS;
