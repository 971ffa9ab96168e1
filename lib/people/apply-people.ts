import { isDeepStrictEqual } from 'node:util';
import type { AccountConfig, Agent, Team } from '#lib/accounts/types.ts';
import { peopleActionCount } from '#lib/data/people/people.ts';
import { ConcurrentWrite, retryOnConflict, StaleVersion } from '#lib/data/store/errors.ts';
import { MAX_TRANSACTION_ITEMS } from '#lib/data/store/transact.ts';
import { getOpenWork } from '#lib/data/tickets/tickets.ts';
import { nowMicros } from '#lib/time.ts';
import { commitPeople, teamsLeft } from './commit.ts';
import { type PeopleState, type PlannedPeople, planPeople } from './plan.ts';

/**
 * `apply`'s agents and teams (operations.md, "Account file"): what the file changes, written as the API writes it
 * (./plan.ts: the same items, natural-key items, versions and events), in as few transactions as hold it, teams
 * first (the agents' memberships name them). Decided on the configuration the file was merged with (read with its
 * versions), so an agent or team the API changed meanwhile fails the apply instead of being overwritten with what
 * was read before: apply again.
 */
export class PeopleChangedMeanwhile extends Error {
  constructor(options?: ErrorOptions) {
    super("The account's agents or teams changed while the file was applied: apply it again.", options);
  }
}

export async function applyPeople(
  accountId: string,
  read: AccountConfig,
  merged: { teams: Team[]; agents: Agent[] },
): Promise<{ commits: number }> {
  const busy = await getOpenWork(accountId);
  let state: PeopleState = { config: read, busy, nowUs: nowMicros() };
  const oldTeams = new Map(read.teams.map((t) => [t.id, t]));
  const oldAgents = new Map(read.agents.map((a) => [a.id, a]));
  const todo: { teams: Team[]; agents: Agent[] }[] = [
    ...merged.teams
      .filter((t) => !isDeepStrictEqual(oldTeams.get(t.id), t))
      .map((team) => ({ teams: [team], agents: [] })),
    ...merged.agents
      .filter((a) => !isDeepStrictEqual(oldAgents.get(a.id), a))
      .map((agent) => ({ teams: [], agents: [agent] })),
  ];
  let chunk: { teams: Team[]; agents: Agent[] } = { teams: [], agents: [] };
  let planned: PlannedPeople | undefined;
  let commits = 0;
  try {
    for (const entity of todo) {
      const grown = { teams: [...chunk.teams, ...entity.teams], agents: [...chunk.agents, ...entity.agents] };
      const plan = planPeople(state, grown);
      // Beside the writes, the hand-back item and the team wake's Update, when the change has them.
      const beside = (plan.handBack.length > 0 ? 1 : 0) + (teamsLeft(plan).length > 0 ? 1 : 0);
      if (planned && peopleActionCount(plan.writes) + beside > MAX_TRANSACTION_ITEMS) {
        await commitChunk(accountId, planned);
        commits++;
        state = { config: planned.next, busy, nowUs: nowMicros() };
        chunk = entity;
        planned = planPeople(state, chunk);
      } else {
        chunk = grown;
        planned = plan;
      }
    }
    if (planned && planned.writes.length > 0) {
      await commitChunk(accountId, planned);
      commits++;
    }
    return { commits };
  } catch (error) {
    if (error instanceof StaleVersion) throw new PeopleChangedMeanwhile({ cause: error });
    throw error;
  }
}

/** One transaction of the apply's; lost to a concurrent transaction (not to a changed version): tried again. */
const commitChunk = (accountId: string, planned: PlannedPeople) =>
  retryOnConflict(() => commitPeople(accountId, planned, undefined, { moveVersion: false }), {
    retryable: (error) => error instanceof ConcurrentWrite,
  });
