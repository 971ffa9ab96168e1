import { randomUUID } from 'node:crypto';
import { forgetAccountConfig } from '#lib/accounts/config-cache.ts';
import { type AccountConfig, type Agent, type Team, versionKey } from '#lib/accounts/types.ts';
import { loadAccountConfig, reserveIds } from '#lib/data/accounts/accounts.ts';
import { moveConfigVersion } from '#lib/data/accounts/config-version.ts';
import { handBackAction } from '#lib/data/people/handbacks.ts';
import { AgentEmailTaken, TeamNameTaken, writePeople } from '#lib/data/people/people.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/requests/idempotency.ts';
import { lostToRace, retryOnConflict } from '#lib/data/store/errors.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { freedAction } from '#lib/data/tickets/freed.ts';
import { wakeTeamsAction } from '#lib/data/tickets/team-wake.ts';
import { getOpenWork } from '#lib/data/tickets/tickets.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { logError } from '#lib/log.ts';
import { freedByAgentChange } from '#lib/tickets/queue.ts';
import { formatTimestamp, nowMicros, nowMillis } from '#lib/time.ts';
import { MAX_MEMBERSHIP_CHANGES, type PeopleState, type PlannedPeople } from './plan.ts';

/** What the people routes share: reading what a change decides on, committing it, and their refusals. */

/** A resource as a route answers it, and its version (its ETag). */
export interface Shown<T> {
  data: T;
  version: number;
}

export const EMAIL_TAKEN = 'The email has already been taken.';
export const NAME_TAKEN = 'The name has already been taken.';

/**
 * The account's people as a change decides on them: its configuration as stored (never the cache: each write is
 * guarded by the versions read here) and every agent's open tickets, in one round trip.
 */
export async function readPeople(accountId: string): Promise<PeopleState> {
  const [config, busy] = await Promise.all([loadAccountConfig(accountId), getOpenWork(accountId)]);
  if (!config) throw new NotFound();
  return { config, busy, nowUs: nowMicros() };
}

/** A change decided again from a fresh reading when another one landed first (StaleVersion, a conflict). */
export const retryPeople = <T>(attempt: () => Promise<T>) =>
  retryOnConflict(attempt, {
    retryable: lostToRace,
  });

/**
 * Writes a planned change in one transaction with its events (and a kept answer), then moves the configuration's
 * version so that every container's next request reads it (lib/accounts/config-cache.ts). A natural key another
 * holds is the 422 it is; `conditions` are checked in the same transaction (a deleted team's open tickets). The change has landed once the transaction has: a failure to move the version is logged,
 * and leaves the change to the cache's lifetime elsewhere.
 */
export async function commitPeople(
  accountId: string,
  planned: PlannedPeople,
  attachment?: CommitAttachment,
  options: { moveVersion?: boolean; conditions?: CommitAction[] } = {},
): Promise<void> {
  try {
    await writePeople(accountId, planned.writes, {
      attach: [
        ...(options.conditions ?? []),
        ...completionCommit(attachment),
        ...freedByPeople(accountId, planned),
      ],
      events: planned.events,
      // What it hands back, due at once: the runner unassigns the tickets (lib/people/handback.ts).
      handBack:
        planned.handBack.length > 0
          ? handBackAction(
              accountId,
              `${nowMicros()}-${randomUUID().slice(0, 8)}`,
              planned.handBack,
              nowMillis(),
            )
          : undefined,
    });
  } catch (error) {
    if (error instanceof AgentEmailTaken) throw ValidationFailed.field('email', EMAIL_TAKEN);
    if (error instanceof TeamNameTaken) throw ValidationFailed.field('name', NAME_TAKEN);
    throw error;
  }
  forgetAccountConfig(accountId);
  // An apply moves it once, when all of its changes have landed.
  if (options.moveVersion !== false) await moveConfigVersion(accountId).catch(logError);
}

/**
 * A create (`POST /api/agents`, `/api/teams`): decided on a fresh reading (`decide` checks it and makes the entity
 * and its change, `at` its time), its id reserved once (a retry after a lost race keeps it), committed with its
 * kept answer. Answers the new resource at version 1.
 */
export function createPerson<T>(
  accountId: string,
  sequence: 'agent' | 'team',
  attach: ((shown: Shown<T>) => CommitAttachment) | undefined,
  decide: (
    state: PeopleState,
    id: () => Promise<number>,
    at: string,
  ) => Promise<{ planned: PlannedPeople; data: T }>,
): Promise<Shown<T>> {
  let reserved: number | undefined;
  const id = async () => {
    reserved ??= (await reserveIds(accountId, { [sequence]: 1 }))[sequence] as number;
    return reserved;
  };
  return retryPeople(async () => {
    const state = await readPeople(accountId);
    const { planned, data } = await decide(state, id, formatTimestamp(state.nowUs));
    const shown = { data, version: 1 };
    await commitPeople(accountId, planned, attach?.(shown));
    return shown;
  });
}

/**
 * The e-mail (compared lower-cased) is another agent's: refused before anything is written. The uniqueness items
 * make this race-free (lib/data/people/people.ts); this reading covers agents an account file wrote before them.
 */
export function refuseTakenEmail(config: AccountConfig, email: string, self?: number): void {
  const wanted = email.toLowerCase();
  if (config.agents.some((a) => a.id !== self && a.email.toLowerCase() === wanted)) {
    throw ValidationFailed.field('email', EMAIL_TAKEN);
  }
}

export function refuseTakenName(config: AccountConfig, name: string, self?: number): void {
  const wanted = name.toLowerCase();
  if (config.teams.some((t) => t.id !== self && t.name.toLowerCase() === wanted)) {
    throw ValidationFailed.field('name', NAME_TAKEN);
  }
}

/**
 * Ids of a body that name no agent (no team) of the account, another account's included: a 422 on each one's place
 * (`team_ids.1`), before anything is written.
 */
export function refuseUnknown(
  known: readonly (Agent | Team)[],
  ids: readonly number[],
  field: 'team_ids' | 'agent_ids',
): void {
  const have = new Set(known.map((k) => k.id));
  const each = field === 'team_ids' ? 'team id' : 'agent id';
  const errors = Object.fromEntries(
    ids.flatMap((id, i) => (have.has(id) ? [] : [[`${field}.${i}`, [`The selected ${each} is invalid.`]]])),
  );
  if (Object.keys(errors).length > 0) throw new ValidationFailed(errors);
}

/** A membership change bigger than one commit holds: a 422 on the list that asked for it. */
export function refuseTooManyMoves(moves: number, field: 'team_ids' | 'agent_ids'): void {
  if (moves > MAX_MEMBERSHIP_CHANGES) {
    throw ValidationFailed.field(
      field,
      `At most ${MAX_MEMBERSHIP_CHANGES} memberships can change in one request (this one changes ${moves}).`,
    );
  }
}

/** The number of ids in one list and not the other: the memberships a change of `before` to `after` moves. */
export const movesBetween = (before: readonly number[], after: readonly number[]) =>
  before.filter((id) => !after.includes(id)).length + after.filter((id) => !before.includes(id)).length;

/** An agent's or a team's version in a configuration read from the store. */
export const versionIn = (config: AccountConfig, type: 'agent' | 'team', id: number) =>
  config.versions?.[versionKey(type, id)] ?? 1;

/**
 * The freed entries of the agents a change may free (back, more room, a team joined; at an away status's end), in
 * the change's transaction: the queue's next ticket follows (lib/tickets/queue.ts). And the team wake, when an active
 * agent leaves teams: those left with no active agent have their waiting tickets go to the account's agents with
 * room at once (lib/tickets/team-wake.ts), one Update however many teams.
 */
function freedByPeople(accountId: string, planned: PlannedPeople) {
  const nowUs = nowMicros();
  const freed = planned.writes.flatMap((w) => {
    if (w.type !== 'agent') return [];
    const at = freedByAgentChange(w.before, w.after, nowUs);
    return at === undefined ? [] : [freedAction(accountId, w.after.id, at)];
  });
  const left = teamsLeft(planned);
  return left.length > 0 ? [...freed, wakeTeamsAction(accountId, left, nowMillis())] : freed;
}

/**
 * The teams an active agent of the change left (retired, or out of the team) that still exist, staffed after it or
 * not: the wake's runner serves only those it finds with no active agent (serveTeam). Two changes at once may each
 * read the other's agent still active (two retirements write no item in common: a retirement does not write its
 * teams), so a change that woke only the teams it left agentless as it read them left a team whose last two agents
 * retired together asleep, its tickets waiting while others had room. An `apply` counts the wake's Update in the
 * room its transactions take (./apply-people.ts).
 */
export function teamsLeft(planned: PlannedPeople): number[] {
  const left = new Set(
    planned.writes.flatMap((w) =>
      w.type === 'agent' && w.before?.active
        ? w.before.teamIds.filter((t) => !(w.after.active && w.after.teamIds.includes(t)))
        : [],
    ),
  );
  return planned.next.teams.map((t) => t.id).filter((id) => left.has(id));
}
