import type { Agent } from '#lib/accounts/types.ts';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import { moveConfigVersion } from '#lib/data/accounts/config-version.ts';
import {
  claimSourceKey,
  findSourceKeys,
  pendingMember,
  type SourceKeyRecord,
  type SourceKeyRef,
  touchSourceKey,
} from '#lib/data/imports/source-keys.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { logError } from '#lib/log.ts';
import { commitPeople, readPeople } from '#lib/people/commit.ts';
import {
  MAX_MEMBERSHIP_CHANGES,
  type PeopleState,
  type PlannedPeople,
  planPeople,
} from '#lib/people/plan.ts';
import { CreateAgentSchema } from '#lib/people/schemas.ts';
import { parseInput } from '#lib/validation.ts';
import { importEvent } from './imported-from.ts';
import { type Keyed, RecordRefused, writeEach } from './people-common.ts';
import type { ImportedAgent } from './records.ts';
import type { ImportContext, PageWritten } from './writing.ts';

/**
 * Imported agents (issue 42): found by their source key, else matched to the account's agent of the same e-mail
 * (compared case-insensitively; that agent keeps its name and state, `imported_from` stays null, undo leaves it),
 * else created, inactive unless active at the source. Memberships: the teams the source names that are imported
 * already (an earlier run's) are set at once, teams of this source it no longer names are left; and the agent is
 * a pending member of every team it names (the team's own write takes it in: teams are imported after agents).
 * Written as the API writes people (lib/people/plan.ts: items, natural keys, versions, events with `import_id`).
 */
export async function writeAgents(
  ctx: ImportContext,
  agents: readonly ImportedAgent[],
  written: PageWritten,
): Promise<void> {
  if (agents.length === 0) return;
  let state = await readPeople(ctx.accountId);
  const teamKeys = await findSourceKeys(
    ctx.accountId,
    ctx.source,
    'teams',
    agents.flatMap((a) => a.teamSourceIds),
  );
  let commits = 0;
  await writeEach(ctx, agents, written, {
    type: 'agents',
    sourceIdOf: (a) => a.sourceId,
    check: (a) => {
      const { email, name } = parseInput(CreateAgentSchema, { email: a.email, name: a.name });
      return { ...a, email, name };
    },
    reread: async () => {
      state = await readPeople(ctx.accountId);
    },
    write: async (keyed) => {
      const { after, actions, outcome } = await decideAgent(ctx, state, teamKeys, keyed);
      const planned = planPeople(state, { agents: [after] });
      if (planned.writes.length - 1 > MAX_MEMBERSHIP_CHANGES) {
        throw new RecordRefused(
          `The agent changes more than ${MAX_MEMBERSHIP_CHANGES} team memberships at once.`,
        );
      }
      // Changed at the source, but not here (a field not imported): the key moves, the agent stays as it is.
      const changed = outcome === 'created' || planned.writes.length > 0 ? outcome : 'unchanged';
      if (ctx.validate) return changed;
      await commitImported(ctx, planned, actions);
      commits++;
      state = { ...state, config: planned.next };
      return changed;
    },
  });
  if (commits > 0) await moveConfigVersion(ctx.accountId).catch(logError);
}

/** The agent after its record, the source key's action and its teams' pending members, and the outcome. */
async function decideAgent(
  ctx: ImportContext,
  state: PeopleState,
  teamKeys: Map<string, SourceKeyRecord>,
  { record, ref, digest, found }: Keyed<ImportedAgent>,
): Promise<{ after: Agent; actions: CommitAction[]; outcome: 'created' | 'updated' }> {
  const { config } = state;
  // The account's teams this source made (their source ids): the memberships the source decides.
  const sourceTeams = new Map(
    config.teams.flatMap((t) => (t.importedFrom?.source === ctx.source ? [[t.id, t.importedFrom.id]] : [])),
  );
  const wanted = record.teamSourceIds.flatMap((id) => {
    const objectId = teamKeys.get(id)?.objectId;
    return typeof objectId === 'number' && config.teams.some((t) => t.id === objectId) ? [objectId] : [];
  });
  const teamIds = (before: readonly number[]) =>
    [...new Set([...before.filter((t) => !sourceTeams.has(t)), ...wanted])].sort((a, b) => a - b);
  const byEmail = config.agents.find((a) => a.email.toLowerCase() === record.email.toLowerCase());
  const known = found ? config.agents.find((a) => a.id === found.objectId) : byEmail;
  if (found && !known)
    throw new RecordRefused('The agent it was imported as is not in the account any more.');

  let after: Agent;
  let key: CommitAction;
  if (known) {
    const matched = found ? found.matched : true;
    const fields = matched ? {} : { email: record.email, name: record.name, active: record.active };
    after = { ...known, ...fields, teamIds: teamIds(known.teamIds) };
    key = found
      ? touchSourceKey(ctx.accountId, ref, found.digest, digest, ctx.mark)
      : claimSourceKey(ctx.accountId, ref, { objectId: known.id, importId: ctx.importId, digest, matched });
  } else {
    const id = ctx.validate ? 0 : ((await reserveIds(ctx.accountId, { agent: 1 })).agent as number);
    after = {
      id,
      email: record.email,
      name: record.name,
      active: record.active,
      teamIds: teamIds([]),
      status: 'available',
      statusUntil: null,
      capacity: null,
      importedFrom: { source: ctx.source, id: record.sourceId, importId: ctx.importId },
    };
    key = claimSourceKey(
      ctx.accountId,
      ref,
      { objectId: id, importId: ctx.importId, digest, matched: false },
      ctx.mark,
    );
  }
  const team = (sourceId: string): SourceKeyRef => ({ ...ref, type: 'teams', sourceId });
  const left = (known?.teamIds ?? []).filter((t) => sourceTeams.has(t) && !after.teamIds.includes(t));
  const actions = [
    key,
    ...record.teamSourceIds.map((id) => pendingMember(ctx.accountId, team(id), after.id, 'ADD')),
    ...left.map((t) => pendingMember(ctx.accountId, team(sourceTeams.get(t) as string), after.id, 'DELETE')),
  ];
  return { after, actions, outcome: known ? 'updated' : 'created' };
}

/** A planned change of people, with its events flagged as the import's and `actions` in the same commit. */
export function commitImported(ctx: ImportContext, planned: PlannedPeople, actions: CommitAction[]) {
  const tagged = { ...planned, events: planned.events.map((e) => importEvent(e, ctx.importId)) };
  return commitPeople(ctx.accountId, tagged, undefined, { conditions: actions, moveVersion: false });
}
