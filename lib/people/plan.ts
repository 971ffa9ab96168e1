import { isDeepStrictEqual } from 'node:util';
import { type AccountConfig, type Agent, type Team, versionKey } from '#lib/accounts/types.ts';
import type { EventDraft } from '#lib/data/events.ts';
import type { HandBackPart } from '#lib/data/people/handbacks.ts';
import type { PeopleWrite } from '#lib/data/people/people.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { formatTimestamp } from '#lib/time.ts';
import { handBackParts } from './handback.ts';
import { membersOf, presentAgent, presentTeam } from './present.ts';

/**
 * A change of agents and teams, planned as one commit (no I/O): the items it writes, each at the version read, and
 * its events. Membership is kept on the agents alone (`teamIds`), so the team's `agent_ids` and the agent's
 * `team_ids` cannot disagree; a team whose agents change is written too (its version and `updated_at` move, its
 * `team.updated` shows its `agent_ids`), so a concurrent change of the same membership from either side finds a
 * version it did not read and is decided again. The API's routes (./agents.ts, ./teams.ts) and `apply`
 * (./apply-people.ts) plan their changes here: both write the same items, ids and events.
 */

/** The account's people as read for a change: the configuration (read from the store, with its versions). */
export interface PeopleState {
  config: AccountConfig;
  /** Open tickets per agent (what `open_tickets` shows), as read beside it. */
  busy: Readonly<Record<string, number>>;
  nowUs: number;
}

/** What a change makes of them: agents and teams after it (new ones, or changed), teams deleted. */
export interface PeopleChange {
  agents?: Agent[];
  teams?: Team[];
  deletedTeams?: number[];
}

export interface PlannedPeople {
  writes: PeopleWrite[];
  events: EventDraft[];
  /** The configuration once the change committed (with its versions). */
  next: AccountConfig;
  /** The open tickets the change hands back (./handback.ts), written as one hand-back item in its commit. */
  handBack: HandBackPart[];
}

/**
 * The most agents (for a team) or teams (for an agent) one request may move in or out: the change then fits one
 * transaction of 100 actions. An agent moved takes its item, its event's two actions and, joining, its queue's freed
 * entry (4); the team takes as many, two name items more when renamed, the hand-back item and a kept answer: 23 × 4
 * + 8 = 100. (30 before the queue's freed entries: a team PATCH moving 30 agents in then answered 500.) A change
 * that leaves teams with no active agent adds the team wake's one Update; it moves someone out, whose share holds
 * no freed entry, so it fits the same count.
 */
export const MAX_MEMBERSHIP_CHANGES = 23;

/** A planned change made by an import's undo (lib/imports/undo.ts): its events carry the import's id. */
export function withImportId(planned: PlannedPeople, importId: string | undefined): PlannedPeople {
  return importId ? { ...planned, events: planned.events.map((e) => ({ ...e, importId })) } : planned;
}

export function planPeople(state: PeopleState, change: PeopleChange): PlannedPeople {
  const { config, nowUs } = state;
  const at = formatTimestamp(nowUs);
  const deleted = new Set(change.deletedTeams ?? []);
  const oldAgents = new Map(config.agents.map((a) => [a.id, a]));
  const oldTeams = new Map(config.teams.map((t) => [t.id, t]));

  // Only what the change names (and a deleted team's agents, who leave it in the same commit) is compared: an
  // apply plans its changes a few at a time against a configuration of up to thousands.
  const named = new Map((change.agents ?? []).map((a) => [a.id, a]));
  if (deleted.size > 0) {
    for (const agent of config.agents) {
      const current = named.get(agent.id) ?? agent;
      if (current.teamIds.some((t) => deleted.has(t))) {
        named.set(agent.id, { ...current, teamIds: current.teamIds.filter((t) => !deleted.has(t)) });
      }
    }
  }
  const changedAgents = [...named.values()]
    .filter((a) => !isDeepStrictEqual(oldAgents.get(a.id), a))
    .map((a) => stampAgent(a, oldAgents.get(a.id), at));
  const agents = new Map(oldAgents);
  for (const agent of changedAgents) agents.set(agent.id, agent);

  const joinedOrLeft = new Set(
    changedAgents.flatMap((a) => moved(oldAgents.get(a.id)?.teamIds ?? [], a.teamIds)),
  );
  const namedTeams = new Map((change.teams ?? []).map((t) => [t.id, t]));
  for (const id of joinedOrLeft) {
    const team = namedTeams.get(id) ?? oldTeams.get(id);
    if (team) namedTeams.set(id, team);
  }
  for (const id of deleted) namedTeams.delete(id);
  const changedTeams = [...namedTeams.values()]
    .filter((t) => joinedOrLeft.has(t.id) || !isDeepStrictEqual(oldTeams.get(t.id), t))
    .map((t) => ({ ...t, createdAt: oldTeams.get(t.id)?.createdAt ?? t.createdAt ?? at, updatedAt: at }));
  const teams = new Map(oldTeams);
  for (const id of deleted) teams.delete(id);
  for (const team of changedTeams) teams.set(team.id, team);

  const versionOf = (type: 'agent' | 'team', id: number) => config.versions?.[versionKey(type, id)] ?? 0;
  const writes: PeopleWrite[] = [
    ...changedTeams.map((t) => teamWrite(oldTeams.get(t.id), versionOf('team', t.id), t)),
    ...changedAgents.map(
      (a): PeopleWrite => ({
        type: 'agent',
        before: oldAgents.get(a.id),
        version: versionOf('agent', a.id),
        after: a,
      }),
    ),
    ...[...deleted].map((id) => teamWrite(oldTeams.get(id), versionOf('team', id), undefined)),
  ];

  const next: AccountConfig = {
    ...config,
    agents: [...agents.values()].sort((a, b) => a.id - b.id),
    teams: [...teams.values()].sort((a, b) => a.id - b.id),
    versions: nextVersions(config.versions ?? {}, writes),
  };
  return {
    writes,
    events: eventsOf(state, next, writes),
    next,
    handBack: handBackParts(oldAgents, changedAgents),
  };
}

/** An agent as written: `updatedAt` now; a new one with its defaults and `createdAt` (an account file gives neither). */
function stampAgent(agent: Agent, before: Agent | undefined, at: string): Agent {
  if (before) return { ...agent, updatedAt: at };
  return {
    status: 'available',
    statusUntil: null,
    capacity: null,
    ...agent,
    createdAt: agent.createdAt ?? at,
    updatedAt: at,
  };
}

function teamWrite(before: Team | undefined, version: number, after: Team | undefined): PeopleWrite {
  return { type: 'team', before, version, after };
}

/** The teams an agent joined or left. */
function moved(before: readonly number[], after: readonly number[]): number[] {
  return [...before.filter((t) => !after.includes(t)), ...after.filter((t) => !before.includes(t))];
}

function nextVersions(versions: Record<string, number>, writes: PeopleWrite[]): Record<string, number> {
  const next = { ...versions };
  for (const w of writes) {
    const key = versionKey(w.type, (w.after ?? w.before)?.id as number);
    if (w.after === undefined) delete next[key];
    else next[key] = w.version + 1;
  }
  return next;
}

/** Each write's event, the object as its GET answers it after the change (a deleted team: as it was). */
function eventsOf(state: PeopleState, next: AccountConfig, writes: PeopleWrite[]): EventDraft[] {
  const { config, busy, nowUs } = state;
  const since = config.account.createdAt;
  const agentShown = (a: Agent) => presentAgent(a, busy[a.id] ?? 0, since, nowUs);
  const teamShown = (t: Team, of: AccountConfig) => presentTeam(t, membersOf(of.agents, t.id), since);
  return writes.map((w): EventDraft => {
    if (w.type === 'agent') {
      return w.version === 0
        ? createdEvent('agent', agentShown(w.after))
        : updatedEvent('agent', agentShown(w.before as Agent), agentShown(w.after), w.version + 1);
    }
    const before = w.before as Team;
    if (w.after === undefined) {
      return { type: 'team.deleted', object: teamShown(before, config), version: w.version + 1 };
    }
    return w.version === 0
      ? createdEvent('team', teamShown(w.after, next))
      : updatedEvent('team', teamShown(before, config), teamShown(w.after, next), w.version + 1);
  });
}
