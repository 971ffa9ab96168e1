import * as v from 'valibot';
import { AGENT_STATUSES } from '#lib/accounts/types.ts';
import { param, picked, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { MAX_EXACT_INTEGER } from '#lib/number-fields.ts';
import { clearable, someField, sometimes } from '#lib/validation/patch-fields.ts';
import { futureTime, futureTimeWire } from '#lib/validation/time-fields.ts';
import { optionalField, parseInput, requiredEmail, requiredText } from '#lib/validation.ts';

/** Request bodies and queries of the agent and team routes (decisions.md, "People"), with Laravel's messages. */
export const MAX_CAPACITY = 10_000;
/** The most ids a membership list takes (a team of every agent of the largest account, and room). */
export const MAX_MEMBERS = 10_000;
export const DEFAULT_PEOPLE_LIMIT = 50;
export const MAX_PEOPLE_LIMIT = 100;

const ID_WIRE = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_EXACT_INTEGER));

/** A list of ids (`team_ids`, `agent_ids`): integers ≥ 1, each once, in ascending order. */
function idList(field: string, each: string) {
  const message = `Each ${each} must be an integer of at least 1.`;
  return v.pipe(
    v.array(v.unknown(), `The ${field.replaceAll('_', ' ')} field must be an array.`),
    v.maxLength(
      MAX_MEMBERS,
      `The ${field.replaceAll('_', ' ')} field must not have more than ${MAX_MEMBERS} items.`,
    ),
    v.array(
      v.pipe(
        v.number(message),
        v.integer(message),
        v.minValue(1, message),
        v.maxValue(MAX_EXACT_INTEGER, message),
      ),
    ),
    v.transform((ids) => [...new Set(ids)].sort((a, b) => a - b)),
  );
}
const idListWire = v.pipe(v.array(ID_WIRE), v.maxLength(MAX_MEMBERS));

const active = v.boolean('The active field must be true or false.');
const status = v.picklist(AGENT_STATUSES, 'The selected status is invalid.');
const capacity = v.pipe(
  v.number('The capacity field must be an integer.'),
  v.integer('The capacity field must be an integer.'),
  v.check((n) => n >= 1 && n <= MAX_CAPACITY, `The capacity field must be between 1 and ${MAX_CAPACITY}.`),
);
const capacityWire = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_CAPACITY));

/** The `createAgent` route. */
export const CreateAgentSchema = v.object({
  email: requiredEmail('email'),
  name: requiredText('name', 255),
  active: optionalField(active, v.boolean()),
  team_ids: optionalField(idList('team_ids', 'team id'), idListWire),
  status: optionalField(status, v.picklist(AGENT_STATUSES)),
  status_until: optionalField(futureTime('status_until'), futureTimeWire),
  capacity: optionalField(capacity, capacityWire),
});
export type CreateAgentInput = v.InferOutput<typeof CreateAgentSchema>;

const UpdateAgentFields = v.object({
  email: sometimes(requiredEmail('email')),
  name: sometimes(requiredText('name', 255)),
  active: sometimes(active, v.boolean()),
  team_ids: sometimes(idList('team_ids', 'team id'), idListWire),
  status: sometimes(status, v.picklist(AGENT_STATUSES)),
  status_until: clearable(
    futureTime('status_until'),
    'The status until field must be a time or null.',
    futureTimeWire,
  ),
  capacity: clearable(capacity, 'The capacity field must be an integer or null.', capacityWire),
});
/** The `updateAgent` route: the fields sent, at least one. */
export const UpdateAgentSchema = v.pipe(UpdateAgentFields, someField(UpdateAgentFields));
export type UpdateAgentInput = v.InferOutput<typeof UpdateAgentSchema>;

/** The `createTeam` route. */
export const CreateTeamSchema = v.object({
  name: requiredText('name', 255),
  agent_ids: optionalField(idList('agent_ids', 'agent id'), idListWire),
});
export type CreateTeamInput = v.InferOutput<typeof CreateTeamSchema>;

const UpdateTeamFields = v.object({
  name: sometimes(requiredText('name', 255)),
  agent_ids: sometimes(idList('agent_ids', 'agent id'), idListWire),
});
/** The `updateTeam` route: the fields sent, at least one. */
export const UpdateTeamSchema = v.pipe(UpdateTeamFields, someField(UpdateTeamFields));
export type UpdateTeamInput = v.InferOutput<typeof UpdateTeamSchema>;

/** An id in a query or a path: digits, as the cursor lists take them. */
const queryId = (field: string) => param(field, wholeNumber(field, 1), wholeNumberWire(1));

const listParams = {
  after: queryId('after'),
  limit: param('limit', wholeNumber('limit', 1, MAX_PEOPLE_LIMIT), wholeNumberWire(1, MAX_PEOPLE_LIMIT)),
};

/** The `listAgents` route's query: the cursor (`after`, an agent id), `limit`, and the filters. */
export const AgentListQueryParams = v.object({
  ...listParams,
  team_id: queryId('team_id'),
  active: param('active', picked('active', ['true', 'false'] as const), v.picklist(['true', 'false'])),
  status: param('status', picked('status', AGENT_STATUSES), v.picklist(AGENT_STATUSES)),
});

/** The `listTeams` route's query: the cursor (`after`, a team id) and `limit`. */
export const TeamListQueryParams = v.object(listParams);

export interface CursorQuery {
  after: number;
  limit: number;
}

export interface AgentListQuery extends CursorQuery {
  teamId?: number | undefined;
  active?: boolean | undefined;
  status?: (typeof AGENT_STATUSES)[number] | undefined;
}

export function parseAgentListQuery(query: Record<string, string[]>): AgentListQuery {
  const q = parseInput(AgentListQueryParams, query);
  return {
    after: q.after ?? 0,
    limit: q.limit ?? DEFAULT_PEOPLE_LIMIT,
    teamId: q.team_id,
    active: q.active === undefined ? undefined : q.active === 'true',
    status: q.status,
  };
}

export function parseTeamListQuery(query: Record<string, string[]>): CursorQuery {
  const q = parseInput(TeamListQueryParams, query);
  return { after: q.after ?? 0, limit: q.limit ?? DEFAULT_PEOPLE_LIMIT };
}

/** An id in a path (`/api/agents/{agent}`): digits; anything else names nothing (404). */
export function pathId(ref: string): number | undefined {
  return /^\d{1,15}$/.test(ref.trim()) ? Number(ref.trim()) : undefined;
}
