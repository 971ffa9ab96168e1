import { randomBytes } from 'node:crypto';
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ALL_DUE_SHARDS, type DueCursors, dueWindowOf } from '../index/due.ts';
import { queueKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * The queue's freed entries (docs/decisions.md, "The queue"): a Put in the transaction of the change that may
 * free an agent (a ticket of theirs resolved or reassigned, their status back, their capacity raised, a team
 * joined), due at once or when an away status ends; the queue runner serves the agent and deletes the entry, so a
 * change that commits is always followed by the agent's turn at the queue, and a crash before the delete by
 * another.
 */
export function freedAction(accountId: string, agentId: number, atMs: number): CommitAction {
  return { what: 'queue_freed', action: { Put: freedPut(accountId, agentId, atMs) } };
}

/**
 * A freeing of its own, after the work that freed the agent committed: a hand-back's team part, whose tickets each
 * left the agent in a commit of their own (lib/people/handback.ts), frees them once when it ends.
 */
export async function markFreed(accountId: string, agentId: number, atMs: number): Promise<void> {
  await dynamo.send(new PutCommand(freedPut(accountId, agentId, atMs)));
}

const freedPut = (accountId: string, agentId: number, atMs: number) => ({
  TableName: tableName(),
  Item: {
    ...queueKeys.freed(accountId, agentId),
    ...queueKeys.freedDue(accountId, agentId, atMs, freeingMark()),
    type: 'queue_freed',
  },
});

/**
 * A freeing's own mark in its due key: the runner deletes (or moves) the entry it read only while its key is still
 * the one read. Without it a freeing in the same millisecond as the one the runner was serving had the same key, and
 * the runner's delete removed it: the agent's new room was never served (a test of the queue once failed so).
 */
export const freeingMark = () => randomBytes(6).toString('hex');

/**
 * Where an agent's turn is in the agentless teams it asks, a window at a time (lib/tickets/assignment.ts,
 * agentlessWindow): `seed` from the freeing's mark (a fresh rotation starts at a random team), `after` the last
 * team a turn asked and `left` how many were still to ask then, kept in the mark of an entry a turn moved on.
 */
export interface Rotation {
  seed: number;
  after?: number;
  left?: number;
}

export interface FreedEntry {
  accountId: string;
  /** null: the account's team wake (./team-wake.ts). */
  agentId: number | null;
  /** The entry's due sort key as read: its delete is conditional on it (a later freeing is kept). */
  gsi2sk: string;
  rotation: Rotation;
}

function rotationOf(mark: string): Rotation {
  const [hex = '', after, left] = mark.split('~');
  const seed = Number.parseInt(hex.slice(0, 8), 16) || 0;
  return after === undefined ? { seed } : { seed, after: Number(after), left: Number(left) };
}

/** The entry's item, and its due key at `atMs` with a new mark (and a rotation's place). */
const keyOf = (entry: FreedEntry) =>
  entry.agentId === null ? queueKeys.wake(entry.accountId) : queueKeys.freed(entry.accountId, entry.agentId);
function dueOf(entry: FreedEntry, atMs: number, rotation?: Rotation) {
  const place = rotation?.after === undefined ? '' : `~${rotation.after}~${rotation.left ?? 0}`;
  const mark = `${freeingMark()}${place}`;
  return entry.agentId === null
    ? queueKeys.wakeDue(entry.accountId, atMs, mark)
    : queueKeys.freedDue(entry.accountId, entry.agentId, atMs, mark);
}

/** The freed entries due at `nowMs`: a window of the due index, a page a shard from where the last ended. */
export async function dueFreedWindow(
  nowMs: number,
  cursors: DueCursors,
  perShard?: number,
): Promise<{ entries: FreedEntry[]; more: boolean }> {
  const keys = {
    dueIndex: queueKeys.freedDueIndex,
    duePartition: queueKeys.freedDuePartition,
    dueBefore: queueKeys.freedDueBefore,
    parseDue: (gsi2sk: string) => {
      const { accountId, agentId, mark } = queueKeys.parseFreedDue(gsi2sk);
      return { accountId, agentId, gsi2sk, rotation: rotationOf(mark) };
    },
  };
  return dueWindowOf(keys, nowMs, ALL_DUE_SHARDS, cursors, perShard);
}

/**
 * The agent served: the entry deleted, unless a change freed them again since it was read (its due key moved: the
 * new entry stays for the next pass, which serves what that change freed).
 */
export async function finishFreed(entry: FreedEntry): Promise<void> {
  await dynamo
    .send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keyOf(entry),
        ConditionExpression: 'gsi2sk = :sk',
        ExpressionAttributeValues: { ':sk': entry.gsi2sk },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionFailure(error)) throw error;
    });
}

/**
 * The entry moved to `atMs`, unless a change freed the agent again since it was read (that entry is kept): a turn
 * that failed, so one failing agent is not served again at every pass, an agent away until `atMs`, a turn that
 * asked one window of the agentless teams and leaves the next to the next pass (`rotation`), or a team wake's turn
 * that served some of its teams (`served`, taken out of its set: ./team-wake.ts).
 */
export async function postponeFreed(
  entry: FreedEntry,
  atMs: number,
  moved: { rotation?: Rotation; served?: readonly number[] } = {},
): Promise<void> {
  const due = dueOf(entry, atMs, moved.rotation);
  const served = moved.served ?? [];
  await dynamo
    .send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keyOf(entry),
        UpdateExpression: `SET gsi2pk = :pk, gsi2sk = :sk${served.length > 0 ? ' DELETE teams :served' : ''}`,
        ConditionExpression: 'gsi2sk = :read',
        ExpressionAttributeValues: {
          ':pk': due.gsi2pk,
          ':sk': due.gsi2sk,
          ':read': entry.gsi2sk,
          ...(served.length > 0 ? { ':served': new Set(served) } : {}),
        },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionFailure(error)) throw error;
    });
}
