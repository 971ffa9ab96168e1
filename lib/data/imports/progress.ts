import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { importKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import type { ImportJob } from './jobs.ts';

/**
 * Saves a job's progress within a page (lib/imports/page-progress.ts; display only), and `running` (a resumed job
 * is paused until its first save), at the revision read and under `owner`'s lease, without moving the revision: the
 * page's own save still lands. False when either moved on (the page saved, the lease taken over).
 */
export async function saveProgress(
  job: ImportJob,
  owner: string,
  progress: ImportJob['progress'],
): Promise<boolean> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: importKeys.job(job.accountId, job.id),
        UpdateExpression: 'SET progress = :progress, #status = :running',
        ConditionExpression: '#rev = :rev AND #owner = :me',
        ExpressionAttributeNames: { '#rev': 'rev', '#owner': 'owner', '#status': 'status' },
        ExpressionAttributeValues: {
          ':progress': progress,
          ':running': 'running',
          ':rev': job.rev,
          ':me': owner,
        },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
