import type { Agent, Team } from '#lib/accounts/types.ts';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import { moveConfigVersion } from '#lib/data/accounts/config-version.ts';
import { claimSourceKey, findPendingMembers, touchSourceKey } from '#lib/data/imports/source-keys.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { logError } from '#lib/log.ts';
import { readPeople } from '#lib/people/commit.ts';
import { MAX_MEMBERSHIP_CHANGES, planPeople } from '#lib/people/plan.ts';
import { CreateTeamSchema } from '#lib/people/schemas.ts';
import { parseInput } from '#lib/validation.ts';
import { commitImported } from './people-agents.ts';
import { type Keyed, RecordRefused, writeEach } from './people-common.ts';
import type { ImportedTeam } from './records.ts';
import type { ImportContext, PageWritten } from './writing.ts';

/**
 * Imported teams (issue 42): found by their source key, else matched to the account's team of the same name
 * (case-insensitively: it keeps its name, `imported_from` stays null), else created. Each takes in its pending
 * members (the imported agents whose source record names it: lib/data/imports/source-keys.ts): with its own commit
 * up to MAX_MEMBERSHIP_CHANGES of them, the rest in commits of as many after it.
 */
export async function writeTeams(
  ctx: ImportContext,
  teams: readonly ImportedTeam[],
  written: PageWritten,
): Promise<void> {
  if (teams.length === 0) return;
  let state = await readPeople(ctx.accountId);
  const members = await findPendingMembers(
    ctx.accountId,
    ctx.source,
    teams.map((t) => t.sourceId),
  );
  let commits = 0;

  /** Commits the team (when given) and as many of `joining` as one commit holds; answers the rest. */
  const commitPart = async (
    team: Team | undefined,
    teamId: number,
    joining: Agent[],
    key: CommitAction[],
  ) => {
    const now = joining.slice(0, MAX_MEMBERSHIP_CHANGES);
    const agents = now.map((a) => ({ ...a, teamIds: [...a.teamIds, teamId].sort((x, y) => x - y) }));
    const planned = planPeople(state, { teams: team ? [team] : [], agents });
    await commitImported(ctx, planned, key);
    commits++;
    state = { ...state, config: planned.next };
    return joining.slice(now.length);
  };

  const write = async ({ record, ref, digest, found }: Keyed<ImportedTeam>) => {
    const { config } = state;
    const byName = config.teams.find((t) => t.name.toLowerCase() === record.name.toLowerCase());
    const known = found ? config.teams.find((t) => t.id === found.objectId) : byName;
    if (found && !known) throw new RecordRefused('The team it was imported as was deleted here.');
    let team: Team;
    let key: CommitAction;
    if (known) {
      const matched = found ? found.matched : true;
      team = matched ? known : { ...known, name: record.name };
      if (!matched && byName && byName.id !== known.id) {
        throw new RecordRefused('The name has already been taken by another team.');
      }
      key = found
        ? touchSourceKey(ctx.accountId, ref, found.digest, digest, ctx.mark)
        : claimSourceKey(ctx.accountId, ref, { objectId: known.id, importId: ctx.importId, digest, matched });
    } else {
      const id = ctx.validate ? 0 : ((await reserveIds(ctx.accountId, { team: 1 })).team as number);
      team = {
        id,
        name: record.name,
        importedFrom: { source: ctx.source, id: record.sourceId, importId: ctx.importId },
      };
      key = claimSourceKey(
        ctx.accountId,
        ref,
        { objectId: id, importId: ctx.importId, digest, matched: false },
        ctx.mark,
      );
    }
    const pending = new Set(members.get(record.sourceId) ?? []);
    let joining = config.agents.filter((a) => pending.has(a.id) && !a.teamIds.includes(team.id));
    // Changed at the source, but not here: the key moves, the team stays as it is.
    const outcome = !known ? 'created' : team !== known || joining.length > 0 ? 'updated' : 'unchanged';
    if (ctx.validate) return outcome;
    joining = await commitPart(team, team.id, joining, [key]);
    while (joining.length > 0) {
      const fresh = new Set(joining.map((a) => a.id));
      joining = await commitPart(
        undefined,
        team.id,
        state.config.agents.filter((a) => fresh.has(a.id)),
        [],
      );
    }
    return outcome;
  };

  await writeEach(ctx, teams, written, {
    type: 'teams',
    sourceIdOf: (t) => t.sourceId,
    check: (t) => ({ ...t, name: parseInput(CreateTeamSchema, { name: t.name }).name }),
    reread: async () => {
      state = await readPeople(ctx.accountId);
    },
    write,
  });
  if (commits > 0) await moveConfigVersion(ctx.accountId).catch(logError);
}
