import { randomInt } from 'node:crypto';
import type { AccountConfig, Agent, AssignmentMethod } from '#lib/accounts/types.ts';
import type { BusyCondition } from '#lib/data/tickets/tickets.ts';
import { statusAt } from '#lib/people/present.ts';

/**
 * Automatic assignment (decisions.md, "Automatic assignment" and "People"; docs/decisions.md, "Availability and
 * capacity in assignment"). Who may take a ticket is decided here, from the configuration, the open work per agent
 * and the clock, and nowhere else: a create uses it, and so will the queue that hands a waiting ticket out.
 */

/** Open, pending and in-progress tickets per agent id (least-busy's cells; absent: none). */
export type OpenWork = Readonly<Record<string, number>>;

/** Active and, at `nowUs`, available (an away or offline status whose `status_until` has passed is). */
export function isAvailable(agent: Agent, nowUs: number): boolean {
  return agent.active && statusAt(agent, nowUs).status === 'available';
}

/**
 * The candidates before capacity, in ascending id order: the available agents of the ticket's team when the team has
 * at least one active agent (all of them away, offline or full: none, no fallback), otherwise the available agents
 * of the account (a team with no active agent at all falls back to the account, as before availability existed).
 */
export function candidatesFor(config: AccountConfig, teamId: number | null, nowUs: number): Agent[] {
  const active = config.agents.filter((a) => a.active).sort((a, b) => a.id - b.id);
  const ofTeam = teamId === null ? [] : active.filter((a) => a.teamIds.includes(teamId));
  return (ofTeam.length > 0 ? ofTeam : active).filter((a) => isAvailable(a, nowUs));
}

/**
 * The queues whose tickets the agent may take now, by the same rule as a create (candidatesFor includes them): each
 * team of theirs, each team with no active agent at all (the team rule's fallback to the account), and the account's
 * own (null: tickets without a team). A team with an active agent they are not part of never has them among its
 * candidates, so only those two kinds of team are asked, from the configuration alone: no scan of the tickets.
 * `window` keeps the agentless teams a turn asks (agentlessWindow: at most AGENTLESS_HEADS of them).
 */
export function queuesFor(
  config: AccountConfig,
  agent: Agent,
  nowUs: number,
  window: (agentless: number[]) => number[] = (all) => all,
): (number | null)[] {
  const agentless = agentlessTeams(config);
  const own = config.teams
    .map((t) => t.id)
    .filter((id) => agent.teamIds.includes(id) && !agentless.includes(id));
  return [...own, ...window(agentless), null].filter((teamId) =>
    candidatesFor(config, teamId, nowUs).some((c) => c.id === agent.id),
  );
}

/** The teams with no active agent at all, in ascending id order (their tickets are the account's agents'). */
export function agentlessTeams(config: AccountConfig): number[] {
  const staffed = new Set(config.agents.filter((a) => a.active).flatMap((a) => a.teamIds));
  return config.teams
    .map((t) => t.id)
    .filter((id) => !staffed.has(id))
    .sort((a, b) => a - b);
}

/** The most agentless teams' queue heads an agent's turn asks (docs/capacity.md, "The queue's listing"). */
export const AGENTLESS_HEADS = 20;

/**
 * The agentless teams (ascending ids) a turn asks: all of them up to AGENTLESS_HEADS; beyond, the AGENTLESS_HEADS
 * after `after` (by id, wrapping round), or, starting afresh, from the `seed`-th (a random team of the freeing's own):
 * no team is always last, and a turn that finds nothing in its window leaves the next one to the next turn.
 */
export function agentlessWindow(agentless: readonly number[], seed: number, after?: number): number[] {
  if (agentless.length <= AGENTLESS_HEADS) return [...agentless];
  const next = after === undefined ? -1 : agentless.findIndex((id) => id > after);
  const start = after === undefined ? seed % agentless.length : next < 0 ? 0 : next;
  return Array.from(
    { length: AGENTLESS_HEADS },
    (_, i) => agentless[(start + i) % agentless.length] as number,
  );
}

/** Whether a pick among `candidates` needs the agents' open work: least-busy always, the others for a capacity. */
export function needsOpenWork(method: AssignmentMethod, candidates: readonly Agent[]): boolean {
  return method === 'least_busy' || candidates.some((a) => a.capacity != null);
}

/** Below their capacity (null: no limit) with this open work. */
export function belowCapacity(agent: Agent, busy: OpenWork | undefined): boolean {
  if (agent.capacity == null) return true;
  if (!busy) throw new Error(`the open work is needed for agent ${agent.id}'s capacity`);
  return (busy[agent.id] ?? 0) < agent.capacity;
}

/** What a pick decides on beside the candidates: the round-robin cursor, the open work, a lost pick's spread. */
export interface PickState {
  /** Round-robin: this create's place in the candidate set's sequence (from 1). */
  cursor?: number | undefined;
  /** Needed when needsOpenWork says so. */
  busy?: OpenWork | undefined;
  /** Least-busy after a lost pick: ties at random (leastBusyPick). */
  spread?: boolean | undefined;
}

/**
 * The account's method over the candidates below their capacity; undefined when none is (the ticket stays
 * unassigned). Round-robin walks on from the cursor's candidate past the full ones, so while nobody is full each
 * agent takes every size-th create, as before capacities; a full agent's turn goes to the next with room.
 */
export function pickAssignee(
  method: AssignmentMethod,
  candidates: readonly Agent[],
  state: PickState,
): Agent | undefined {
  const open = candidates.filter((a) => belowCapacity(a, state.busy));
  if (open.length === 0) return undefined;
  if (method === 'random') return randomPick(open);
  if (method === 'least_busy') return leastBusyPick(open, state.busy ?? {}, state.spread);
  const room = new Set(open);
  const start = ((state.cursor ?? 1) - 1) % candidates.length;
  for (let i = 0; ; i++) {
    const agent = candidates[(start + i) % candidates.length] as Agent;
    if (room.has(agent)) return agent;
  }
}

/**
 * What the create's commit checks on the picked agent's cell, so that racing creates cannot pass what the pick
 * relied on: least-busy, that their open work is still what it saw (below their capacity, since the pick saw
 * them so); another method, for an agent with a capacity, that their open work is still below it; else nothing.
 */
export function pickCondition(
  method: AssignmentMethod,
  agent: Agent,
  busy: OpenWork | undefined,
): BusyCondition | undefined {
  if (method === 'least_busy') return { chosen: agent.id, seen: busy?.[agent.id] ?? 0 };
  return agent.capacity == null ? undefined : { chosen: agent.id, below: agent.capacity };
}

/** Name of a candidate set, under which its round-robin cursor is kept. */
export function candidateSetName(candidates: readonly Agent[]): string {
  return candidates.map((a) => a.id).join('_');
}

/** Round-robin: the n-th create over a candidate set (cursor from 1) takes candidate (n - 1) mod size. */
export function roundRobinPick(candidates: readonly Agent[], cursor: number): Agent {
  return candidates[(cursor - 1) % candidates.length] as Agent;
}

export function randomPick(candidates: readonly Agent[]): Agent {
  return candidates[randomInt(candidates.length)] as Agent;
}

/**
 * Least-busy: fewest open/pending/in-progress tickets; ties go to the lowest id. `spread`: ties go to one of
 * the tied at random instead, for a create that lost its pick to a concurrent one: those that lost together
 * would otherwise all take the next lowest id and lose again, one landing a round.
 */
export function leastBusyPick(candidates: readonly Agent[], busy: OpenWork, spread = false): Agent {
  const load = (agent: Agent) => busy[agent.id] ?? 0;
  const fewest = Math.min(...candidates.map(load));
  const tied = candidates.filter((agent) => load(agent) === fewest);
  return (spread ? tied[randomInt(tied.length)] : tied[0]) as Agent;
}
