import type { ImportType } from '#lib/imports/records.ts';
import { importKeys } from '../keys.ts';
import type { CommitAttachment } from '../requests/idempotency.ts';
import { completionCommit } from '../requests/idempotency.ts';
import { queryAll, tableName } from '../store/client.ts';
import { commit } from '../store/transact.ts';
import { activeClaim } from './active.ts';
import { type ImportJob, RUN_ENDS } from './jobs.ts';

/**
 * Undoing an import as stored (lib/imports/undo.ts; docs/imports.md, "Undo"): the ask that turns an ended job into
 * an undoing one, and the pages of what it created (gsi1 `IMPORT_CREATED#<acc>#<id>` / `<type>#<hash>`, one entry
 * per source key the import claimed for an object it made; matched ones have none).
 */

/** One object the import created: its type and our id (a number or a uuid), and its key's place in gsi1. */
export interface CreatedObject {
  type: ImportType;
  objectId: string | number;
  /** The entry's gsi1sk: the checkpoint once it is undone. */
  sk: string;
}

/**
 * Makes an ended job `undoing` (its checkpoint `undo` from the start, due at once) and the account's active import
 * again, with the request's kept answer, in one commit. `refused`: the error for a job no longer ended as read
 * (another undo came first), or for another import active (given its id).
 */
export async function requestUndo(
  job: ImportJob,
  nowMs: number,
  attach: ((undoing: ImportJob) => CommitAttachment) | undefined,
  refused: { notEnded: () => Error; active: (activeId: string) => Error },
): Promise<ImportJob> {
  const undoing: ImportJob = {
    ...job,
    status: 'undoing',
    checkpoint: { phase: 'undo', next: null, page: job.checkpoint.page + 1 },
    cancelRequested: false,
    rev: job.rev + 1,
  };
  const shown = { ...undoing, owner: null, until: null };
  const due = importKeys.due(job.accountId, job.id, nowMs);
  await commit([
    {
      what: 'import',
      action: {
        Update: {
          TableName: tableName(),
          Key: importKeys.job(job.accountId, job.id),
          UpdateExpression:
            'SET #status = :undoing, checkpoint = :checkpoint, cancelRequested = :no, #rev = :next, ' +
            'gsi2pk = :pk, gsi2sk = :sk REMOVE #owner, #until',
          ConditionExpression: '#rev = :rev AND #status IN (:s0, :s1, :s2)',
          ExpressionAttributeNames: {
            '#status': 'status',
            '#rev': 'rev',
            '#owner': 'owner',
            '#until': 'until',
          },
          ExpressionAttributeValues: {
            ':undoing': 'undoing',
            ':checkpoint': undoing.checkpoint,
            ':no': false,
            ':rev': job.rev,
            ':next': undoing.rev,
            ':pk': due.gsi2pk,
            ':sk': due.gsi2sk,
            ...Object.fromEntries(RUN_ENDS.map((status, i) => [`:s${i}`, status])),
          },
        },
      },
      refused: () => refused.notEnded(),
    },
    activeClaim(job.accountId, job.id, refused.active),
    ...completionCommit(attach?.(shown)),
  ]);
  return shown;
}

/**
 * Up to `limit` objects of `type` the import created, after the gsi1 sort key `after` (null: the type's start), in
 * key order: one Query of the import's gsi1 partition.
 */
export async function createdPage(
  accountId: string,
  importId: string,
  type: ImportType,
  after: string | null,
  limit: number,
): Promise<CreatedObject[]> {
  const items = await queryAll(
    {
      TableName: tableName(),
      IndexName: importKeys.createdByIndex,
      KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': importKeys.createdByPartition(accountId, importId),
        ':from': after ?? `${type}#`,
        ':to': `${type}#~`,
      },
    },
    limit + 1,
  );
  return items
    .filter((item) => item.gsi1sk !== after)
    .slice(0, limit)
    .map((item) => ({ type, objectId: item.objectId as string | number, sk: String(item.gsi1sk) }));
}
