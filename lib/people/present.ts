import type { Agent, AgentStatus, Team } from '#lib/accounts/types.ts';
import { presentImportedFrom } from '#lib/imports/imported-from.ts';
import { formatTimestamp, nowMicros, parseTimestamp, type Timestamp } from '#lib/time.ts';

/**
 * Agents and teams as the API shows them (decisions.md, "People"). Items an account file wrote before people were
 * resources have no times, status or capacity: they read as created with the account, available, without limit.
 */

/** An agent's status at `nowUs`: an away or offline status whose `statusUntil` has passed reads as available. */
export function statusAt(
  agent: Agent,
  nowUs: number,
): { status: AgentStatus; statusUntil: Timestamp | null } {
  const until = agent.statusUntil ?? null;
  if (until !== null && parseTimestamp(until) <= nowUs) return { status: 'available', statusUntil: null };
  return { status: agent.status ?? 'available', statusUntil: until };
}

/** `since`: the account's creation, what an agent from before these fields reads as created at. */
export function presentAgent(agent: Agent, openTickets: number, since: Timestamp, nowUs = nowMicros()) {
  const { status, statusUntil } = statusAt(agent, nowUs);
  return {
    id: agent.id,
    email: agent.email,
    name: agent.name,
    active: agent.active,
    team_ids: [...agent.teamIds].sort((a, b) => a - b),
    status,
    status_until: statusUntil,
    capacity: agent.capacity ?? null,
    open_tickets: openTickets,
    created_at: agent.createdAt ?? since,
    updated_at: agent.updatedAt ?? agent.createdAt ?? since,
    imported_from: presentImportedFrom(agent.importedFrom),
  };
}

export type AgentView = ReturnType<typeof presentAgent>;

/** A team's agents: those naming it (membership is kept on the agents alone), in ascending id order. */
export function membersOf(agents: readonly Agent[], teamId: number): number[] {
  return agents
    .filter((a) => a.teamIds.includes(teamId))
    .map((a) => a.id)
    .sort((a, b) => a - b);
}

export function presentTeam(team: Team, agentIds: number[], since: Timestamp) {
  return {
    id: team.id,
    name: team.name,
    agent_ids: agentIds,
    created_at: team.createdAt ?? since,
    updated_at: team.updatedAt ?? team.createdAt ?? since,
    imported_from: presentImportedFrom(team.importedFrom),
  };
}

export type TeamView = ReturnType<typeof presentTeam>;

/** A time the API was sent (epoch µs) as it is stored and shown. */
export const storedTime = (us: number): Timestamp => formatTimestamp(us);
