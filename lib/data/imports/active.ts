import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { importKeys } from '../keys/imports.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import { getJob, type ImportJob } from './jobs.ts';

/** The account's one active import (the job `ACTIVE` names), or undefined: one GetItem, then the job's. */
export async function activeImport(accountId: string): Promise<ImportJob | undefined> {
  const active = await getItem(importKeys.active(accountId));
  return typeof active?.id === 'string' ? getJob(accountId, active.id) : undefined;
}

/**
 * A paused job made due at `nowMs` (`admin import` run again after its Ctrl-C: operations.md, "Imports"), or
 * undefined when it is no longer paused. The runner that takes it sets it running.
 */
export async function resumePaused(job: ImportJob, nowMs: number): Promise<ImportJob | undefined> {
  const due = importKeys.due(job.accountId, job.id, nowMs);
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: importKeys.job(job.accountId, job.id),
        UpdateExpression: 'SET gsi2pk = :pk, gsi2sk = :sk',
        ConditionExpression: '#status = :paused',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':pk': due.gsi2pk, ':sk': due.gsi2sk, ':paused': 'paused' },
      }),
    );
    return getJob(job.accountId, job.id);
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}
