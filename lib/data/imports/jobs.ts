import type { ImportPhase, ImportSource, ImportType } from '#lib/imports/records.ts';
import type { TypeCounts } from '#lib/imports/writing.ts';
import type { Timestamp } from '#lib/time.ts';
import { importKeys } from '../keys.ts';
import type { CommitAttachment } from '../requests/idempotency.ts';
import { completionCommit } from '../requests/idempotency.ts';
import { getItem, queryAll, tableName } from '../store/client.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { activeClaim } from './active.ts';

/**
 * Import jobs as stored (docs/imports.md, "Jobs"; keys in ../keys/imports.ts): the job item, and the account's one
 * active import beside it. Every save of a running job is guarded by its `rev` (./runs.ts); the credentials are a
 * sealed blob (`cred`, lib/imports/credentials.ts) that the save ending the job removes.
 */
export type ImportStatus =
  | 'queued'
  | 'running'
  | 'paused'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'undoing'
  | 'undone';
export type ImportMode = 'validate' | 'run';
/** The ends of a job's run: what an undo starts from (and `undone`, the end of an undo). */
export const RUN_ENDS: readonly ImportStatus[] = ['completed', 'failed', 'cancelled'];
export const ENDED: readonly ImportStatus[] = [...RUN_ENDS, 'undone'];
/** A job's phase: one of the source's while it runs, `undo` while it is undone (lib/imports/undo.ts). */
export type JobPhase = ImportPhase | 'undo';

export interface ImportCheckpoint {
  phase: JobPhase;
  /** The source's `next` of the phase (null: its start); undoing, the last created key undone. */
  next: string | null;
  /** Pages saved so far in the whole job: the error rows' keys. */
  page: number;
}

export interface ImportJob {
  accountId: string;
  id: string;
  source: ImportSource;
  mode: ImportMode;
  status: ImportStatus;
  since: Timestamp | null;
  rateShare: number | null;
  progress: { done: number; total: number | null };
  counts: Partial<Record<ImportType, TypeCounts>>;
  checkpoint: ImportCheckpoint;
  createdAt: Timestamp;
  startedAt: Timestamp | null;
  completedAt: Timestamp | null;
  failure: string | null;
  /** Cancel asked for: the runner ends the job at its next checkpoint. */
  cancelRequested: boolean;
  /** ndjson: whether its file is uploaded (the job is due only then). Other sources: true. */
  uploaded: boolean;
  /** The sealed credentials while the job has not ended; null after. */
  cred: string | null;
  rev: number;
  /** The runner holding the job, and until when (epoch ms): its lease. */
  owner: string | null;
  until: number | null;
  /** When the job was paused (epoch ms), kept across pauses until a step saves progress: 7 days of it cancel it. */
  pausedAt: number | null;
}

const FIELDS = [
  'source',
  'mode',
  'status',
  'since',
  'rateShare',
  'progress',
  'counts',
  'checkpoint',
  'createdAt',
  'startedAt',
  'completedAt',
  'failure',
  'cancelRequested',
  'uploaded',
] as const;

export function jobOf(item: Record<string, unknown>, accountId: string): ImportJob {
  const job = { accountId, id: String(item.id) } as Record<string, unknown>;
  for (const field of FIELDS) job[field] = item[field];
  job.cred = (item.cred as string | undefined) ?? null;
  job.rev = Number(item.rev);
  job.owner = (item.owner as string | undefined) ?? null;
  job.until = item.until === undefined ? null : Number(item.until);
  job.pausedAt = item.pausedAt === undefined ? null : Number(item.pausedAt);
  return job as unknown as ImportJob;
}

/** The job's item: its fields, its keys and (when due at `dueMs`) its due entry. */
export function jobItem(job: ImportJob, dueMs: number | null): Record<string, unknown> {
  const item: Record<string, unknown> = {
    ...importKeys.job(job.accountId, job.id),
    ...(dueMs === null ? {} : importKeys.due(job.accountId, job.id, dueMs)),
    type: 'import',
    id: job.id,
    rev: job.rev,
  };
  for (const field of FIELDS) item[field] = job[field];
  if (job.cred !== null) item.cred = job.cred;
  return item;
}

/**
 * Writes a new job and makes it the account's one active import, with the request's kept answer, in one commit.
 * `refused`: the error a held active import stands for (given its job's id).
 */
export async function putNewJob(
  job: ImportJob,
  dueMs: number | null,
  attach: CommitAttachment | undefined,
  refused: (activeId: string) => Error,
): Promise<void> {
  const actions: CommitAction[] = [
    activeClaim(job.accountId, job.id, refused),
    {
      what: 'import',
      action: {
        Put: {
          TableName: tableName(),
          Item: jobItem(job, dueMs),
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
    ...completionCommit(attach),
  ];
  await commit(actions);
}

/** A job as stored (strongly consistent), or undefined. */
export async function getJob(accountId: string, id: string): Promise<ImportJob | undefined> {
  const item = await getItem(importKeys.job(accountId, id));
  return item ? jobOf(item, accountId) : undefined;
}

/** Up to `limit` of the account's jobs, newest first, older than `before` (a job id) when given. */
export async function listJobs(
  accountId: string,
  before: string | null,
  limit: number,
): Promise<ImportJob[]> {
  const range = importKeys.jobsBelow(before);
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: {
        ':pk': importKeys.partition(accountId),
        ':from': range.from,
        ':to': range.to,
      },
      ScanIndexForward: false,
    },
    limit + 1,
  );
  return items
    .filter((item) => item.sk !== range.to)
    .slice(0, limit)
    .map((item) => jobOf(item, accountId));
}
