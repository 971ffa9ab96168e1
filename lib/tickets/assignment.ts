import { randomInt } from 'node:crypto';
import type { AccountConfig, Agent } from '#lib/accounts/types.ts';

/**
 * Automatic assignment (decisions.md). Candidates: the active agents of the ticket's team when it has one
 * with at least one active agent, otherwise all active agents; in ascending id order.
 */
export function candidatesFor(config: AccountConfig, teamId: number | null): Agent[] {
  const active = config.agents.filter((a) => a.active).sort((a, b) => a.id - b.id);
  if (teamId !== null) {
    const ofTeam = active.filter((a) => a.teamIds.includes(teamId));
    if (ofTeam.length > 0) return ofTeam;
  }
  return active;
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
export function leastBusyPick(
  candidates: readonly Agent[],
  busy: Readonly<Record<string, number>>,
  spread = false,
): Agent {
  const load = (agent: Agent) => busy[agent.id] ?? 0;
  const fewest = Math.min(...candidates.map(load));
  const tied = candidates.filter((agent) => load(agent) === fewest);
  return (spread ? tied[randomInt(tied.length)] : tied[0]) as Agent;
}
