import { importKeys } from '../keys/imports.ts';
import { getItem, tableName } from '../store/client.ts';
import type { CommitAction } from '../store/transact.ts';
import { getJob, type ImportJob } from './jobs.ts';

/** The account's one active import (the job `ACTIVE` names), or undefined: one GetItem, then the job's. */
export async function activeImport(accountId: string): Promise<ImportJob | undefined> {
  const active = await getItem(importKeys.active(accountId));
  return typeof active?.id === 'string' ? getJob(accountId, active.id) : undefined;
}

/**
 * The commit's claim of the account's one active import for `jobId` (a new job, or an ended one being undone),
 * refused with `refused(the holder's id)` while another import holds it.
 */
export function activeClaim(
  accountId: string,
  jobId: string,
  refused: (activeId: string) => Error,
): CommitAction {
  return {
    what: 'import_active',
    action: {
      Put: {
        TableName: tableName(),
        Item: { ...importKeys.active(accountId), type: 'import_active', id: jobId },
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => refused(String(held?.id ?? '')),
  };
}
