import { isDeepStrictEqual } from 'node:util';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { Agent } from '#lib/accounts/types.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { getAgentOpenWork, getOpenWorkOf } from '#lib/data/tickets/tickets.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { updateVersioned } from '#lib/versioned-update.ts';
import {
  commitPeople,
  createPerson,
  movesBetween,
  readPeople,
  refuseTakenEmail,
  refuseTooManyMoves,
  refuseUnknown,
  type Shown,
  versionIn,
} from './commit.ts';
import { type PeopleState, planPeople, withImportId } from './plan.ts';
import { type AgentView, presentAgent, statusAt } from './present.ts';
import {
  type AgentListQuery,
  CreateAgentSchema,
  pathId,
  type UpdateAgentInput,
  UpdateAgentSchema,
} from './schemas.ts';

/**
 * The agent routes (decisions.md, "People"). Reads take the current configuration (lib/accounts/config-cache.ts:
 * a change answered before is in it) and the agents' open tickets from least-busy's own cells; a write reads what
 * it decides on from the store and commits as ./plan.ts plans it.
 */

type Attach = ((shown: Shown<AgentView>) => CommitAttachment) | undefined;

const STATUS_UNTIL_NEEDS_STATUS = 'The status until field needs the status away or offline.';

/** The agent a path names in the caller's account (another account's, or no agent: undefined). */
export async function findAgent(accountId: string, ref: string): Promise<Shown<AgentView> | undefined> {
  const id = pathId(ref);
  if (id === undefined) return undefined;
  const [config, open] = await Promise.all([getAccountConfig(accountId), getAgentOpenWork(accountId, id)]);
  const agent = config?.agents.find((a) => a.id === id);
  if (!config || !agent) return undefined;
  return {
    data: presentAgent(agent, open, config.account.createdAt),
    version: versionIn(config, 'agent', id),
  };
}

export async function getAgent(accountId: string, ref: string): Promise<Shown<AgentView>> {
  const found = await findAgent(accountId, ref);
  if (!found) throw new NotFound();
  return found;
}

/** `GET /api/agents`: by id, after the cursor, filtered; `next_cursor` the last one's id while more follow. */
export async function listAgents(accountId: string, query: AgentListQuery) {
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const nowUs = nowMicros();
  const matching = config.agents
    .filter(
      (a) =>
        a.id > query.after &&
        (query.teamId === undefined || a.teamIds.includes(query.teamId)) &&
        (query.active === undefined || a.active === query.active) &&
        (query.status === undefined || statusAt(a, nowUs).status === query.status),
    )
    .sort((a, b) => a.id - b.id);
  const page = matching.slice(0, query.limit);
  // The page's agents' cells only: a list page reads as much at 10,000 agents as at 10.
  const busy = await getOpenWorkOf(
    accountId,
    page.map((a) => a.id),
  );
  return {
    data: page.map((a) => presentAgent(a, busy[a.id] ?? 0, config.account.createdAt, nowUs)),
    next_cursor: matching.length > page.length ? String(page.at(-1)?.id) : null,
  };
}

/** `POST /api/agents`: `email` free in the account, every team the account's. */
export async function createAgent(
  accountId: string,
  body: unknown,
  attach: Attach,
): Promise<Shown<AgentView>> {
  const input = parseInput(CreateAgentSchema, body);
  const status = input.status ?? 'available';
  if (status === 'available' && input.status_until !== undefined) {
    throw ValidationFailed.field('status_until', STATUS_UNTIL_NEEDS_STATUS);
  }
  const teamIds = input.team_ids ?? [];
  refuseTooManyMoves(teamIds.length, 'team_ids');
  return createPerson(accountId, 'agent', attach, async (state, id, at) => {
    refuseTakenEmail(state.config, input.email);
    refuseUnknown(state.config.teams, teamIds, 'team_ids');
    const agent: Agent = {
      id: await id(),
      email: input.email,
      name: input.name,
      active: input.active ?? true,
      teamIds,
      status,
      statusUntil: input.status_until === undefined ? null : formatTimestamp(input.status_until),
      capacity: input.capacity ?? null,
      createdAt: at,
      updatedAt: at,
    };
    return {
      planned: planPeople(state, { agents: [agent] }),
      data: presentAgent(agent, 0, at, state.nowUs),
    };
  });
}

/** `PATCH /api/agents/{agent}`: the fields sent; If-Match refuses a lost update. */
export async function updateAgent(
  accountId: string,
  ref: string,
  body: unknown,
  options: { ifMatch?: string | undefined; attach: Attach; importId?: string },
): Promise<Shown<AgentView>> {
  const input = parseInput(UpdateAgentSchema, body);
  const id = pathId(ref);
  let state: PeopleState | undefined;
  const show = (agent: Agent, s: PeopleState) =>
    presentAgent(agent, s.busy[agent.id] ?? 0, s.config.account.createdAt, s.nowUs);
  const updated = await updateVersioned<Agent>({
    read: async () => {
      state = id === undefined ? undefined : await readPeople(accountId);
      const agent = state?.config.agents.find((a) => a.id === id);
      return state && agent && { entity: agent, version: versionIn(state.config, 'agent', agent.id) };
    },
    apply: (before) => applyAgentChange(before, input, state as PeopleState),
    write: async (_before, after, version) => {
      const s = state as PeopleState;
      const shown = { data: show(after, s), version: version + 1 };
      // An import's undo retiring the agents it made (lib/imports/undo.ts): the events carry the import's id.
      const planned = withImportId(planPeople(s, { agents: [after] }), options.importId);
      await commitPeople(accountId, planned, options.attach?.(shown));
      return version + 1;
    },
    ifMatch: options.ifMatch,
    changedMessage: 'The agent has changed since you read it (If-Match does not match its ETag).',
  });
  return { data: show(updated.entity, state as PeopleState), version: updated.version };
}

/** The agent after the change (pure, but for its refusals); unchanged when the body changes nothing. */
export function applyAgentChange(before: Agent, input: UpdateAgentInput, state: PeopleState): Agent {
  const after: Agent = { ...before };
  if (input.email !== undefined && input.email.toLowerCase() !== before.email.toLowerCase()) {
    refuseTakenEmail(state.config, input.email, before.id);
  }
  if (input.email !== undefined) after.email = input.email;
  if (input.name !== undefined) after.name = input.name;
  if (input.active !== undefined) after.active = input.active;
  if (input.team_ids !== undefined) {
    refuseUnknown(state.config.teams, input.team_ids, 'team_ids');
    refuseTooManyMoves(movesBetween(before.teamIds, input.team_ids), 'team_ids');
    after.teamIds = input.team_ids;
  }
  if (input.capacity !== undefined) after.capacity = input.capacity;
  if (input.status !== undefined || input.status_until !== undefined) {
    // A new status without an end has none; an end alone is of the status the agent reads as now.
    const current = statusAt(before, state.nowUs);
    const status = input.status ?? current.status;
    const until =
      input.status_until !== undefined
        ? input.status_until === null
          ? null
          : formatTimestamp(input.status_until)
        : input.status !== undefined
          ? null
          : current.statusUntil;
    if (status === 'available' && until !== null) {
      throw ValidationFailed.field('status_until', STATUS_UNTIL_NEEDS_STATUS);
    }
    after.status = status;
    after.statusUntil = until;
  }
  if (isDeepStrictEqual(settled(after), settled(before))) return before;
  return { ...after, updatedAt: formatTimestamp(state.nowUs) };
}

/** An agent with the defaults an account file's older item leaves out: what a change is compared by. */
const settled = (agent: Agent): Agent => ({
  ...agent,
  status: agent.status ?? 'available',
  statusUntil: agent.statusUntil ?? null,
  capacity: agent.capacity ?? null,
});
