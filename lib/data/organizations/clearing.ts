import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { ALL_DUE_SHARDS, type DueCursors, dueWindowOf, moveDueEntry } from '../index/due.ts';
import { organizationKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * A deleted organization's clearing (docs/data-model.md, "Organizations"): an item written in the deletion's own
 * transaction, so a deletion that commits is always cleared, holding the deletion's time and a due entry in gsi2
 * that the clearing runner reads (lib/organizations/clearing-runner.ts). The runner moves the entry on when a step
 * fails or the deletion is too recent to close, and deletes the item once nothing names the organization.
 */

export interface Clearing {
  accountId: string;
  id: number;
  /** When the organization was deleted (epoch ms). */
  deletedMs: number;
}

/** The clearing item of a deletion, due at once: one Put in the deletion's transaction. */
export function clearingAction(accountId: string, id: number, deletedMs: number): CommitAction {
  return {
    what: 'organization_clearing',
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...organizationKeys.clearing(accountId, id),
          ...organizationKeys.clearingDue(accountId, id, deletedMs),
          type: 'organization_clearing',
          id,
          deletedMs,
        },
      },
    },
  };
}

/** The clearings due at `nowMs`: a window of the due index, a page a shard from where the last ended (dueWindow). */
export async function dueClearingWindow(
  nowMs: number,
  cursors: DueCursors,
  perShard?: number,
): Promise<{ entries: { accountId: string; id: number }[]; more: boolean }> {
  const keys = {
    dueIndex: organizationKeys.clearingDueIndex,
    duePartition: organizationKeys.clearingDuePartition,
    dueBefore: organizationKeys.clearingDueBefore,
    parseDue: organizationKeys.parseClearingDue,
  };
  return dueWindowOf(keys, nowMs, ALL_DUE_SHARDS, cursors, perShard);
}

/** The clearing of a deleted organization, or undefined once it is done (strongly consistent). */
export async function getClearing(accountId: string, id: number): Promise<Clearing | undefined> {
  const item = await getItem(organizationKeys.clearing(accountId, id));
  return item ? { accountId, id, deletedMs: Number(item.deletedMs) } : undefined;
}

/** Moves a clearing's due entry to `atMs` (a failed step, or a deletion too recent to close); gone: nothing. */
export async function postponeClearing(accountId: string, id: number, atMs: number): Promise<void> {
  await moveDueEntry(
    organizationKeys.clearing(accountId, id),
    organizationKeys.clearingDue(accountId, id, atMs),
  );
}

/** The clearing done: its item and due entry deleted. */
export async function finishClearing(accountId: string, id: number): Promise<void> {
  await dynamo.send(
    new DeleteCommand({ TableName: tableName(), Key: organizationKeys.clearing(accountId, id) }),
  );
}
