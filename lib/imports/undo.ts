import { putErrorRows } from '#lib/data/imports/errors.ts';
import { type ImportJob, RUN_ENDS } from '#lib/data/imports/jobs.ts';
import { endJob, saveStep } from '#lib/data/imports/runs.ts';
import { type CreatedObject, createdPage, requestUndo } from '#lib/data/imports/undo.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { NotFound, Refused } from '#lib/errors.ts';
import { deleteOrganization } from '#lib/organizations/organizations.ts';
import { updateAgent } from '#lib/people/agents.ts';
import { MAX_MEMBERSHIP_CHANGES } from '#lib/people/plan.ts';
import { deleteTeam, findTeam, MAX_DELETED_TEAM_MEMBERS, updateTeam } from '#lib/people/teams.ts';
import { now, nowMillis } from '#lib/time.ts';
import { deleteObject } from '#lib/trash/delete.ts';
import type { StepOptions, StepOutcome } from './engine.ts';
import { findImport } from './jobs.ts';
import type { ImportErrorRow, ImportType } from './records.ts';

/**
 * Undoing an import (decisions.md, "Imports: moving a helpdesk in"; docs/imports.md, "Undo"): what the import
 * created, and only that (its source keys' gsi1 entries: a matched object has none), is taken out through the
 * API's own paths, each with its ordinary event (carrying the import's id): its tickets and contacts to the trash
 * (restorable as any deletion), its organizations and teams deleted, its agents retired (`active: false`, their
 * open tickets handed back). What it only updated keeps the update.
 *
 * Run by the import runner as the job's phase `undo`: a step is UNDO_PAGE objects of one type, in UNDO_ORDER (tickets
 * first: a team with open tickets is not deleted), then the checkpoint (the last gsi1 key undone) saved under the
 * lease. A crash between the two undoes the page again: what is gone already (in the trash, deleted) is skipped, so
 * nothing is undone twice. An object gone since (a user deleted it) is skipped; one still there (changed, restored)
 * is undone; one the API refuses to take out (a contact with deals, a team still routing a category or with open
 * tickets a user put in it) is kept with an error row.
 */
export const UNDO_ORDER: readonly ImportType[] = ['tickets', 'contacts', 'organizations', 'teams', 'agents'];
/** Objects a step undoes at most: each is one commit of its own. */
export const UNDO_PAGE = 25;
/** Commits that take agents out of a team before its deletion, at most (23 agents each). */
const MAX_EMPTYING = 50;
/** Tickets and contacts are undone this many at once (people one by one: they share the account's configuration). */
const AT_ONCE = 8;

const NOT_ENDED = (status: string) =>
  status === 'undoing'
    ? 'The import is being undone already.'
    : status === 'undone'
      ? 'The import has been undone already.'
      : `The import has not ended (${status}): cancel it, or wait for its end, before undoing it.`;

/** `POST /api/imports/{import}/undo`: an ended run becomes `undoing` (202), the runner undoes it. */
export async function undoImport(
  accountId: string,
  id: string,
  attach: ((undoing: ImportJob) => CommitAttachment) | undefined,
): Promise<ImportJob> {
  const job = await findImport(accountId, id);
  if (!job) throw new NotFound();
  if (job.mode === 'validate') throw new Refused('A validate run wrote nothing: there is nothing to undo.');
  if (!RUN_ENDS.includes(job.status)) throw new Refused(NOT_ENDED(job.status));
  return requestUndo(job, nowMillis(), attach, {
    notEnded: () => new Refused('The import changed meanwhile (another undo came first): read it again.'),
    active: (active) =>
      new Refused(
        `An import is already running for this account (${active}): wait for it to end, or cancel it.`,
      ),
  });
}

/** Where an undo is: the type being undone and the last gsi1 key undone (null: the type's start). */
function cursorOf(next: string | null): { type: ImportType; after: string | null } {
  if (next === null) return { type: UNDO_ORDER[0] as ImportType, after: null };
  const type = next.slice(0, next.indexOf('#')) as ImportType;
  return { type, after: next.endsWith('#') ? null : next };
}

/**
 * One page of an undo, without its save (a crash after it is a runner that died before saving): the objects undone,
 * the page's error rows written; answers the checkpoint's next `next`, or null when everything is undone.
 */
export async function undoPage(job: ImportJob): Promise<string | null> {
  const { type, after } = cursorOf(job.checkpoint.next);
  const page = await createdPage(job.accountId, job.id, type, after, UNDO_PAGE);
  const errors: ImportErrorRow[] = [];
  const together = type === 'tickets' || type === 'contacts' ? AT_ONCE : 1;
  for (let i = 0; i < page.length; i += together) {
    const rows = await Promise.all(page.slice(i, i + together).map((o) => undoOne(job, o)));
    for (const row of rows) if (row) errors.push(row);
  }
  await putErrorRows(job.accountId, job.id, job.checkpoint.page, errors);
  if (page.length === UNDO_PAGE) return (page.at(-1) as CreatedObject).sk;
  const following = UNDO_ORDER[UNDO_ORDER.indexOf(type) + 1];
  return following === undefined ? null : `${following}#`;
}

/** A step of an undo: a page, then its checkpoint saved; after the last, the job `undone` and the account free. */
export async function runUndoStep(job: ImportJob, options: StepOptions): Promise<StepOutcome> {
  const next = await undoPage(job);
  if (next === null) {
    const ended = await endJob(
      job,
      options.owner,
      {
        status: 'undone',
        completedAt: job.completedAt ?? now(),
        failure: job.failure,
        progress: job.progress,
        counts: job.counts,
        startedAt: job.startedAt,
      },
      undefined,
    );
    return { outcome: ended ? 'ended' : 'lost' };
  }
  const saved = await saveStep(
    job,
    options.owner,
    {
      status: 'undoing',
      checkpoint: { phase: 'undo', next, page: job.checkpoint.page + 1 },
      counts: job.counts,
      progress: job.progress,
      startedAt: job.startedAt,
      uploaded: job.uploaded,
    },
    nowMillis() + options.leaseMs,
  );
  return saved ? { outcome: 'more', job: saved } : { outcome: 'lost' };
}

/**
 * Takes one object out as the API does, its event carrying the import's id; gone already (a 404): nothing; refused
 * (a 409): an error row naming it by its id here, kept.
 */
async function undoOne(job: ImportJob, object: CreatedObject): Promise<ImportErrorRow | undefined> {
  const { accountId, id: importId } = job;
  const ref = String(object.objectId);
  try {
    if (object.type === 'tickets') await deleteObject(accountId, 'ticket', ref, { importId });
    else if (object.type === 'contacts') await deleteObject(accountId, 'contact', ref, { importId });
    else if (object.type === 'organizations') await deleteOrganization(accountId, ref, { importId });
    else if (object.type === 'teams') await undoTeam(accountId, ref, importId);
    else if (object.type === 'agents')
      await updateAgent(accountId, ref, { active: false }, { attach: undefined, importId });
    return undefined;
  } catch (error) {
    if (error instanceof NotFound) return undefined;
    if (error instanceof Refused) {
      return { type: object.type, sourceId: ref, reason: `Not undone: ${error.message}` };
    }
    throw error;
  }
}

/**
 * Deletes a team the import created. More agents than its deletion takes out (MAX_DELETED_TEAM_MEMBERS) are first
 * taken out of it as a user would (PATCH its `agent_ids`, MAX_MEMBERSHIP_CHANGES a commit), each commit's events the
 * import's too: an imported team of 40 agents is undone, not refused.
 */
async function undoTeam(accountId: string, ref: string, importId: string): Promise<void> {
  // Bounded: a team of more than MAX_EMPTYING commits' agents is refused by its deletion below (an error row).
  for (let commits = 0; commits < MAX_EMPTYING; commits++) {
    const members = (await findTeam(accountId, ref))?.data.agent_ids ?? [];
    if (members.length <= MAX_DELETED_TEAM_MEMBERS) break;
    const leaving = Math.min(MAX_MEMBERSHIP_CHANGES, members.length - MAX_DELETED_TEAM_MEMBERS);
    await updateTeam(accountId, ref, { agent_ids: members.slice(leaving) }, { attach: undefined, importId });
  }
  await deleteTeam(accountId, ref, { attach: undefined, importId });
}
