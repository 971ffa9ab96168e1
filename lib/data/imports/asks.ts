import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { importKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import { type ImportJob, jobOf } from './jobs.ts';

/**
 * What the API asks of a job that a runner may hold: neither moves its `rev` (a runner's step saves on; the ask is
 * read at its next checkpoint) nor takes its lease.
 */

/**
 * Asks a job to stop at its next checkpoint: due at once, so a runner ends it soon even when it was paused or
 * waiting for its upload. Undefined when there is no such job or it has ended (a cancel of an ended job), and when
 * it is being undone or was (an undo is not cancelled: run again, it goes on from its checkpoint).
 */
export async function requestCancel(
  accountId: string,
  id: string,
  nowMs: number,
): Promise<ImportJob | undefined> {
  return askedUpdate(accountId, id, {
    update: 'SET cancelRequested = :yes, gsi2pk = :pk, gsi2sk = :sk',
    condition: 'attribute_exists(pk) AND NOT #status IN (:completed, :failed, :cancelled, :undoing, :undone)',
    values: {
      ':yes': true,
      ':pk': importKeys.due(accountId, id, nowMs).gsi2pk,
      ':sk': importKeys.due(accountId, id, nowMs).gsi2sk,
      ':completed': 'completed',
      ':failed': 'failed',
      ':cancelled': 'cancelled',
      ':undoing': 'undoing',
      ':undone': 'undone',
    },
  });
}

/** An ndjson job's file is in the store: the job is due at once. Undefined when it is no queued ndjson job. */
export async function markUploaded(
  accountId: string,
  id: string,
  nowMs: number,
): Promise<ImportJob | undefined> {
  return askedUpdate(accountId, id, {
    update: 'SET uploaded = :yes, gsi2pk = :pk, gsi2sk = :sk',
    condition: 'attribute_exists(pk) AND #status = :queued AND #source = :ndjson',
    values: {
      ':yes': true,
      ':pk': importKeys.due(accountId, id, nowMs).gsi2pk,
      ':sk': importKeys.due(accountId, id, nowMs).gsi2sk,
      ':queued': 'queued',
      ':ndjson': 'ndjson',
    },
    names: { '#source': 'source' },
  });
}

/**
 * A paused job made due at `nowMs` (`admin import` run again after its Ctrl-C: operations.md, "Imports"), or
 * undefined when it is no longer paused. The runner that takes it sets it running.
 */
export async function resumePaused(job: ImportJob, nowMs: number): Promise<ImportJob | undefined> {
  const due = importKeys.due(job.accountId, job.id, nowMs);
  return askedUpdate(job.accountId, job.id, {
    update: 'SET gsi2pk = :pk, gsi2sk = :sk',
    condition: '#status = :paused',
    values: { ':pk': due.gsi2pk, ':sk': due.gsi2sk, ':paused': 'paused' },
  });
}

async function askedUpdate(
  accountId: string,
  id: string,
  ask: { update: string; condition: string; values: Record<string, unknown>; names?: Record<string, string> },
): Promise<ImportJob | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: importKeys.job(accountId, id),
        UpdateExpression: ask.update,
        ConditionExpression: ask.condition,
        ExpressionAttributeNames: { '#status': 'status', ...ask.names },
        ExpressionAttributeValues: ask.values,
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes ? jobOf(Attributes, accountId) : undefined;
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}
