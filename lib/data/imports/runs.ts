import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { EventDraft } from '../events.ts';
import { commitWithEvents } from '../events.ts';
import { ALL_DUE_SHARDS, type DueCursors, dueWindowOf } from '../index/due.ts';
import { importKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import { ENDED, type ImportJob, type ImportStatus, jobOf } from './jobs.ts';

/**
 * A job's runs (lib/imports/runner.ts): the due window, the lease, and the saves of a step. A runner claims a due
 * job for a while (`owner`, `until`; the due entry moves to the lease's end, so a runner that dies leaves the job
 * due again when its lease runs out); each save is guarded by the job's `rev` and the runner's lease, so a runner
 * whose lease ran out and was taken over saves nothing, and the one that holds it reads on from the checkpoint.
 */

export async function dueImportWindow(
  nowMs: number,
  cursors: DueCursors,
): Promise<{ entries: { accountId: string; id: string }[]; more: boolean }> {
  return dueWindowOf(importKeys, nowMs, ALL_DUE_SHARDS, cursors);
}

/**
 * Claims a due job for `owner` until `untilMs`: conditional on its being due and held by no other live lease (an
 * owner takes its own again). Undefined when another runner holds it, or it ended meanwhile.
 */
export async function claimJob(
  accountId: string,
  id: string,
  owner: string,
  untilMs: number,
  nowMs: number,
): Promise<ImportJob | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: importKeys.job(accountId, id),
        UpdateExpression: 'SET #owner = :owner, #until = :until, gsi2sk = :sk',
        ConditionExpression:
          'attribute_exists(gsi2sk) AND gsi2sk < :before AND ' +
          '(attribute_not_exists(#until) OR #until < :now OR #owner = :owner)',
        ExpressionAttributeNames: { '#owner': 'owner', '#until': 'until' },
        ExpressionAttributeValues: {
          ':owner': owner,
          ':until': untilMs,
          ':sk': importKeys.due(accountId, id, untilMs).gsi2sk,
          ':before': importKeys.dueBefore(nowMs),
          ':now': nowMs,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes ? jobOf(Attributes, accountId) : undefined;
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

/**
 * Moves `owner`'s lease of a job on to `untilMs` while a long step runs (its due entry with it), without moving its
 * revision: false when the lease is no longer this owner's.
 */
export async function renewLease(
  accountId: string,
  id: string,
  owner: string,
  untilMs: number,
): Promise<boolean> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: importKeys.job(accountId, id),
        UpdateExpression: 'SET #until = :until, gsi2sk = :sk',
        ConditionExpression: '#owner = :owner AND attribute_exists(gsi2sk)',
        ExpressionAttributeNames: { '#owner': 'owner', '#until': 'until' },
        ExpressionAttributeValues: {
          ':owner': owner,
          ':until': untilMs,
          ':sk': importKeys.due(accountId, id, untilMs).gsi2sk,
        },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** What a step saves: the job's new state (the runner's lease kept, moved to `until`). */
export type StepSave = Pick<
  ImportJob,
  'status' | 'checkpoint' | 'counts' | 'progress' | 'startedAt' | 'uploaded'
>;

/**
 * Saves a step at the revision read, under `owner`'s lease, which it moves to `untilMs`: the job as saved, or
 * undefined when another save came first or the lease was taken over (this runner stops; what it wrote is keyed).
 */
export async function saveStep(
  job: ImportJob,
  owner: string,
  save: StepSave,
  untilMs: number,
): Promise<ImportJob | undefined> {
  return guardedUpdate(job, owner, {
    set: { ...save, until: untilMs, gsi2sk: importKeys.due(job.accountId, job.id, untilMs).gsi2sk },
    remove: ['pausedAt'],
  });
}

/**
 * Pauses a job until `dueMs` (the source unavailable, a Ctrl-C): its lease released, due again then. `pausedAt` is
 * set at the first pause and kept by the next ones until a step saves (a source down for days is one long pause).
 */
export async function pauseJob(
  job: ImportJob,
  owner: string,
  dueMs: number,
  nowMs: number,
): Promise<ImportJob | undefined> {
  return guardedUpdate(job, owner, {
    set: { status: 'paused', gsi2sk: importKeys.due(job.accountId, job.id, dueMs).gsi2sk },
    setIfAbsent: { pausedAt: nowMs },
    remove: ['owner', 'until'],
  });
}

/** Releases `owner`'s lease of a job that goes on: due again at `dueMs`. Nothing when the lease was lost. */
export async function releaseJob(job: ImportJob, owner: string, dueMs: number): Promise<void> {
  await guardedUpdate(job, owner, {
    set: { gsi2sk: importKeys.due(job.accountId, job.id, dueMs).gsi2sk },
    remove: ['owner', 'until'],
  });
}

/**
 * Ends a job (completed, failed, cancelled): its credentials, due entry and lease removed, the account's active
 * import freed, and its event (none for a cancel or a validate run), in one commit guarded by the revision and
 * lease. False when another save came first.
 */
export async function endJob(
  job: ImportJob,
  owner: string,
  end: Pick<ImportJob, 'progress' | 'counts'> & {
    status: ImportStatus;
    completedAt: string;
    failure: string | null;
    startedAt: string | null;
  },
  event: EventDraft | undefined,
): Promise<boolean> {
  if (!ENDED.includes(end.status)) throw new Error(`not an end: ${end.status}`);
  const update = updateOf(job, owner, {
    set: end,
    remove: ['cred', 'gsi2pk', 'gsi2sk', 'owner', 'until', 'pausedAt'],
  });
  try {
    await commitWithEvents(
      job.accountId,
      [
        { what: 'import', action: { Update: update } },
        {
          what: 'import_active',
          action: {
            Delete: {
              TableName: tableName(),
              Key: importKeys.active(job.accountId),
              ConditionExpression: 'id = :id',
              ExpressionAttributeValues: { ':id': job.id },
            },
          },
        },
      ],
      event ? [event] : [],
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

interface Change {
  set: Record<string, unknown>;
  /** Set only where the item has none yet. */
  setIfAbsent?: Record<string, unknown>;
  remove?: string[];
}

function updateOf(job: ImportJob, owner: string, change: Change) {
  const names: Record<string, string> = { '#rev': 'rev', '#owner': 'owner' };
  const values: Record<string, unknown> = { ':rev': job.rev, ':next': job.rev + 1, ':me': owner };
  const sets = ['#rev = :next'];
  for (const [field, value] of Object.entries(change.set)) {
    names[`#${field}`] = field;
    values[`:${field}`] = value;
    sets.push(`#${field} = :${field}`);
  }
  for (const [field, value] of Object.entries(change.setIfAbsent ?? {})) {
    names[`#${field}`] = field;
    values[`:${field}`] = value;
    sets.push(`#${field} = if_not_exists(#${field}, :${field})`);
  }
  for (const field of change.remove ?? []) names[`#${field}`] = field;
  const removes = (change.remove ?? []).map((field) => `#${field}`);
  return {
    TableName: tableName(),
    Key: importKeys.job(job.accountId, job.id),
    UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
    ConditionExpression: '#rev = :rev AND #owner = :me',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

async function guardedUpdate(job: ImportJob, owner: string, change: Change): Promise<ImportJob | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({ ...updateOf(job, owner, change), ReturnValues: 'ALL_NEW' }),
    );
    return Attributes ? jobOf(Attributes, job.accountId) : undefined;
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}
