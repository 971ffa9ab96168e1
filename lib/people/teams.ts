import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig, Agent, Team } from '#lib/accounts/types.ts';
import { peopleActionCount } from '#lib/data/people/people.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { MAX_TRANSACTION_ITEMS } from '#lib/data/store/transact.ts';
import { readTeamOpenTickets, TEAM_CLOSE_ACTIONS, teamClosed } from '#lib/data/tickets/tickets.ts';
import { NotFound, PreconditionFailed, Refused, ValidationFailed } from '#lib/errors.ts';
import { parseInput } from '#lib/validation.ts';
import { etagOf, ifMatchHolds, MAX_IF_MATCH_LENGTH, updateVersioned } from '#lib/versioned-update.ts';
import {
  commitPeople,
  createPerson,
  movesBetween,
  readPeople,
  refuseTakenName,
  refuseTooManyMoves,
  refuseUnknown,
  retryPeople,
  type Shown,
  versionIn,
} from './commit.ts';
import {
  MAX_MEMBERSHIP_CHANGES,
  type PeopleState,
  type PlannedPeople,
  planPeople,
  withImportId,
} from './plan.ts';
import { membersOf, presentTeam, type TeamView } from './present.ts';
import { CreateTeamSchema, type CursorQuery, pathId, UpdateTeamSchema } from './schemas.ts';

/**
 * The team routes (decisions.md, "People"). A team's `agent_ids` are the agents naming it: a change of them is a
 * change of those agents, committed with the team (./plan.ts).
 */

type Attach = ((shown: Shown<TeamView>) => CommitAttachment) | undefined;

const CHANGED = 'The team has changed since you read it (If-Match does not match its ETag).';

/** A team with its agents: what a PATCH compares and changes. */
interface Membership {
  team: Team;
  agentIds: number[];
}

const shownIn = (config: AccountConfig, team: Team): Shown<TeamView> => ({
  data: presentTeam(team, membersOf(config.agents, team.id), config.account.createdAt),
  version: versionIn(config, 'team', team.id),
});

/** The team a path names in the caller's account (another account's, or no team: undefined). */
export async function findTeam(accountId: string, ref: string): Promise<Shown<TeamView> | undefined> {
  const id = pathId(ref);
  const config = id === undefined ? undefined : await getAccountConfig(accountId);
  const team = config?.teams.find((t) => t.id === id);
  return config && team ? shownIn(config, team) : undefined;
}

export async function getTeam(accountId: string, ref: string): Promise<Shown<TeamView>> {
  const found = await findTeam(accountId, ref);
  if (!found) throw new NotFound();
  return found;
}

/** `GET /api/teams`: by id, after the cursor; `next_cursor` the last one's id while more follow. */
export async function listTeams(accountId: string, query: CursorQuery) {
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const after = config.teams.filter((t) => t.id > query.after).sort((a, b) => a.id - b.id);
  const page = after.slice(0, query.limit);
  return {
    data: page.map((t) => shownIn(config, t).data),
    next_cursor: after.length > page.length ? String(page.at(-1)?.id) : null,
  };
}

/** `POST /api/teams`: `name` free in the account, every agent the account's. */
export async function createTeam(accountId: string, body: unknown, attach: Attach): Promise<Shown<TeamView>> {
  const input = parseInput(CreateTeamSchema, body);
  const agentIds = input.agent_ids ?? [];
  refuseTooManyMoves(agentIds.length, 'agent_ids');
  return createPerson(accountId, 'team', attach, async (state, id, at) => {
    refuseTakenName(state.config, input.name);
    refuseUnknown(state.config.agents, agentIds, 'agent_ids');
    const team: Team = { id: await id(), name: input.name, createdAt: at, updatedAt: at };
    return {
      planned: planPeople(state, { teams: [team], agents: joined(state, team.id, [], agentIds) }),
      data: presentTeam(team, agentIds, at),
    };
  });
}

/** `PATCH /api/teams/{team}`: its name, its agents (the whole list); If-Match refuses a lost update. */
export async function updateTeam(
  accountId: string,
  ref: string,
  body: unknown,
  options: { ifMatch?: string | undefined; attach: Attach; importId?: string },
): Promise<Shown<TeamView>> {
  const input = parseInput(UpdateTeamSchema, body);
  const id = pathId(ref);
  let state: PeopleState | undefined;
  let after: AccountConfig | undefined;
  const updated = await updateVersioned<Membership>({
    read: async () => {
      after = undefined;
      state = id === undefined ? undefined : await readPeople(accountId);
      const team = state?.config.teams.find((t) => t.id === id);
      if (!state || !team) return undefined;
      return {
        entity: { team, agentIds: membersOf(state.config.agents, team.id) },
        version: versionIn(state.config, 'team', team.id),
      };
    },
    apply: (before) => {
      const s = state as PeopleState;
      if (input.name !== undefined && input.name.toLowerCase() !== before.team.name.toLowerCase()) {
        refuseTakenName(s.config, input.name, before.team.id);
      }
      if (input.agent_ids !== undefined) {
        refuseUnknown(s.config.agents, input.agent_ids, 'agent_ids');
        refuseTooManyMoves(movesBetween(before.agentIds, input.agent_ids), 'agent_ids');
      }
      return {
        team: input.name === undefined ? before.team : { ...before.team, name: input.name },
        agentIds: input.agent_ids ?? before.agentIds,
      };
    },
    write: async (before, change, version) => {
      const s = state as PeopleState;
      const planned = withImportId(
        planPeople(s, {
          teams: [change.team],
          agents: joined(s, change.team.id, before.agentIds, change.agentIds),
        }),
        options.importId,
      );
      const team = planned.next.teams.find((t) => t.id === change.team.id) as Team;
      const shown = { ...shownIn(planned.next, team), version: version + 1 };
      await commitPeople(accountId, planned, options.attach?.(shown));
      after = planned.next;
      return version + 1;
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
  const config = after ?? (state as PeopleState).config;
  const team = config.teams.find((t) => t.id === updated.entity.team.id) as Team;
  return { ...shownIn(config, team), version: updated.version };
}

/**
 * The most agents a team's deletion takes out of it in its one transaction, as documented (OpenAPI, decisions.md):
 * exactly what deleteTeam's check (fitsOneTransaction) allows, since peopleActionCount counts every agent with its
 * queue's freed entry (an away agent's): 15 × 4 + 4 (the team) + 2 (hand-back, kept answer) + 32 (the cell) = 98
 * of 100, 16 would be 102 (test/api/teams-delete.test.ts checks both). A bigger team is emptied first.
 */
export const MAX_DELETED_TEAM_MEMBERS = 15;

/** Whether a deletion's plan, its hand-back and a kept answer, and its cell closed fit one transaction. */
function fitsOneTransaction(plan: PlannedPeople): boolean {
  const handBackAndKept = (plan.handBack.length > 0 ? 1 : 0) + 1;
  return peopleActionCount(plan.writes) + handBackAndKept + TEAM_CLOSE_ACTIONS <= MAX_TRANSACTION_ITEMS;
}

/**
 * `DELETE /api/teams/{team}`: refused (409) while a category routes to it or it has open tickets (open, pending or
 * in_progress, assigned or waiting: its cell in the ticket index, read beside the people and closed in the commit,
 * so a ticket entering the team meanwhile refuses it, and one after it is refused); its agents leave it in the same
 * commit (at most MAX_DELETED_TEAM_MEMBERS of them). Answers the team as it was.
 */
export async function deleteTeam(
  accountId: string,
  ref: string,
  options: { ifMatch?: string | undefined; attach: Attach; importId?: string },
): Promise<Shown<TeamView>> {
  const { ifMatch } = options;
  if (ifMatch !== undefined && ifMatch.length > MAX_IF_MATCH_LENGTH) {
    throw ValidationFailed.field(
      'if_match',
      `The If-Match header must not be greater than ${MAX_IF_MATCH_LENGTH} characters.`,
    );
  }
  const id = pathId(ref);
  if (id === undefined) throw new NotFound();
  return retryPeople(async () => {
    const [state, cell] = await Promise.all([readPeople(accountId), readTeamOpenTickets(accountId, id)]);
    const open = cell.total;
    const team = state.config.teams.find((t) => t.id === id);
    if (!team) throw new NotFound();
    const version = versionIn(state.config, 'team', id);
    if (ifMatch !== undefined && !ifMatchHolds(ifMatch, etagOf(version)))
      throw new PreconditionFailed(CHANGED);
    const routing = state.config.categories.filter((c) => c.defaultTeamId === id).map((c) => c.slug);
    if (routing.length > 0) {
      throw new Refused(
        `The team is the default team of the ${routing.length === 1 ? 'category' : 'categories'} ${routing.join(', ')}: give ${routing.length === 1 ? 'it' : 'them'} another default team first.`,
      );
    }
    if (open > 0) {
      throw new Refused(
        `The team has ${open} open ${open === 1 ? 'ticket' : 'tickets'} (open, pending or in progress): resolve ${open === 1 ? 'it' : 'them'} or move ${open === 1 ? 'it' : 'them'} to another team first.`,
      );
    }
    const members = membersOf(state.config.agents, id);
    const plan = withImportId(planPeople(state, { deletedTeams: [id] }), options.importId);
    if (members.length > MAX_MEMBERSHIP_CHANGES || !fitsOneTransaction(plan)) {
      throw new Refused(
        `The team has ${members.length} agents: take them out of it first (at most ${MAX_DELETED_TEAM_MEMBERS} can leave with its deletion).`,
      );
    }
    const shown = { ...shownIn(state.config, team), version: version + 1 };
    await commitPeople(accountId, plan, options.attach?.(shown), {
      conditions: teamClosed(accountId, cell),
    });
    return shown;
  });
}

/** The agents whose membership of the team changes from `before` to `after`, as they are after it. */
function joined(
  state: PeopleState,
  teamId: number,
  before: readonly number[],
  after: readonly number[],
): Agent[] {
  const moving = new Set([
    ...before.filter((a) => !after.includes(a)),
    ...after.filter((a) => !before.includes(a)),
  ]);
  return state.config.agents
    .filter((a) => moving.has(a.id))
    .map((a) => ({
      ...a,
      teamIds: after.includes(a.id)
        ? [...a.teamIds.filter((t) => t !== teamId), teamId].sort((x, y) => x - y)
        : a.teamIds.filter((t) => t !== teamId),
    }));
}
