import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ALL_DUE_SHARDS, type DueCursors, dueWindowOf } from '../index/due.ts';
import { erasureKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import { entityOf } from '../store/items.ts';
import { type CommitAction, commit } from '../store/transact.ts';

/**
 * An erasure's own items (docs/data-model.md, "Erasures"): the record the API answers, the job's progress item
 * between steps, the running erasure's due entry (the runner's, on the record).
 */

/** An erasure as kept: no address, only its keyed hash (`hash`). */
export interface ErasureRecord {
  id: string;
  status: 'running' | 'completed';
  requestedAt: string;
  completedAt: string | null;
  counts: Record<string, number>;
  hash: string;
}

/** The job's state between steps: deleted in the step that completes it. */
export interface ErasureProgress {
  /** Bumped by every step: a step's save holds only if no other runner saved since it read. */
  step: number;
  phase: string;
  /** Where the phase is (the last posting or reference taken, a trash page's last key), or null at its start. */
  at: string | null;
  /** The object the phase is working on (a ticket, deal or contact uuid), its sub-phase and where that is. */
  object: string | null;
  sub: string | null;
  subAt: string | null;
  /** The person's identifiers while the job runs (the only place they are kept: gone when it completes). */
  person: { email: string; names: string[]; phones: string[] };
  contact: { id: number; uuid: string } | null;
  counts: Record<string, number>;
  /** A mentioned ticket's description is the person's (a follow-up their mail opened): its copies are erased so. */
  describedByPerson?: boolean | undefined;
  /** The mentioned ticket's person reference token as read when chosen (its delete holds only on it). */
  refToken?: string | null | undefined;
}

export const RECORD = 'erasure';
const PROGRESS = 'erasure_progress';

/** The create's two puts (record and progress, the record due now), for one commit with the kept answer. */
export function newErasureActions(
  accountId: string,
  record: ErasureRecord,
  progress: ErasureProgress,
  nowMs: number,
): CommitAction[] {
  return [
    {
      what: 'erasure',
      action: {
        Put: {
          TableName: tableName(),
          Item: {
            ...erasureKeys.record(accountId, record.id),
            ...erasureKeys.due(accountId, record.id, nowMs),
            type: RECORD,
            ...record,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
    {
      what: 'erasure_progress',
      action: {
        Put: {
          TableName: tableName(),
          Item: { ...erasureKeys.progress(accountId, record.id), type: PROGRESS, ...progress },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
  ];
}

export async function getErasureRecord(accountId: string, id: string): Promise<ErasureRecord | undefined> {
  const item = await getItem(erasureKeys.record(accountId, id));
  return item && item.type === RECORD ? entityOf<ErasureRecord>(item) : undefined;
}

export async function getErasureProgress(
  accountId: string,
  id: string,
): Promise<ErasureProgress | undefined> {
  const item = await getItem(erasureKeys.progress(accountId, id));
  return item && entityOf<ErasureProgress>(item);
}

/** Another runner saved a step of this erasure since this one read it: this one stops, that one goes on. */
export class ErasureStepTaken extends Error {
  constructor() {
    super('Another runner took this erasure step');
  }
}

/** Saves the progress of a step, on the condition that it is still the step read (the next step's number). */
export async function saveErasureProgress(
  accountId: string,
  id: string,
  progress: ErasureProgress,
): Promise<void> {
  try {
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...erasureKeys.progress(accountId, id), type: PROGRESS, ...progress },
        ConditionExpression: 'step = :read',
        ExpressionAttributeValues: { ':read': progress.step - 1 },
      }),
    );
  } catch (error) {
    if (isConditionFailure(error)) throw new ErasureStepTaken();
    throw error;
  }
}

/**
 * The running erasures due by `nowMs`, as the erasure runner reads them: its window, in each due shard a page from
 * where its last window ended (lib/data/index/due.ts, dueWindow), shared by account by the runner (fairShare).
 */
export async function dueErasureWindow(
  nowMs: number,
  cursors: DueCursors,
  perShard?: number,
): Promise<{ entries: { accountId: string; id: string }[]; more: boolean }> {
  return dueWindowOf(erasureKeys, nowMs, ALL_DUE_SHARDS, cursors, perShard);
}

/** Takes an erasure out of the due index until `atMs` (a step that failed waits before it is tried again). */
export async function postponeErasure(accountId: string, id: string, atMs: number): Promise<void> {
  const due = erasureKeys.due(accountId, id, atMs);
  await dynamo
    .send(
      new UpdateCommand({
        TableName: tableName(),
        Key: erasureKeys.record(accountId, id),
        UpdateExpression: 'SET gsi2pk = :pk, gsi2sk = :sk',
        ConditionExpression: '#s = :running',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':pk': due.gsi2pk, ':sk': due.gsi2sk, ':running': 'running' },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionFailure(error)) throw error;
    });
}

/** Puts an erasure to run again (the replay): its record running and due now, its job from the start. */
export async function restartErasure(
  accountId: string,
  record: ErasureRecord,
  progress: ErasureProgress,
  nowMs: number,
): Promise<void> {
  await commit(
    newErasureActions(accountId, record, progress, nowMs).map((a) => {
      const { ConditionExpression: _, ...put } = a.action.Put ?? { Item: {}, TableName: tableName() };
      return { ...a, action: { Put: put } };
    }),
  );
}
