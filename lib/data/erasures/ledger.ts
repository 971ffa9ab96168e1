import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { EventDraft } from '../events.ts';
import { writePlan } from '../index/write-plan.ts';
import { erasureKeys } from '../keys.ts';
import { dynamo, queryAll, tableName } from '../store/client.ts';
import { type ErasureProgress, type ErasureRecord, ErasureStepTaken, RECORD } from './records.ts';

/**
 * An erasure's end: its completion, and the ledger (one entry per completed erasure: account, id, keyed hash,
 * no address) that `erasures replay` reads to erase again what a restored backup brings back.
 */

/**
 * The completion, in one transaction with the `contact.erased` event: the record completed with its counts and
 * out of the due index, the ledger entry (hashes only), the progress item (the identifiers) deleted.
 */
export async function completeErasure(
  accountId: string,
  record: ErasureRecord,
  progress: ErasureProgress,
  event: EventDraft,
): Promise<void> {
  const completed = { ...record, status: 'completed' as const };
  await writePlan({
    fixed: [
      {
        what: 'erasure',
        action: {
          Put: {
            TableName: tableName(),
            Item: { ...erasureKeys.record(accountId, record.id), type: RECORD, ...completed },
            ConditionExpression: 'attribute_exists(pk)',
          },
        },
      },
      {
        what: 'erasure_ledger',
        action: {
          Put: {
            TableName: tableName(),
            Item: {
              ...erasureKeys.ledger(accountId, record.id),
              type: 'erasure_ledger',
              accountId,
              id: record.id,
              hash: record.hash,
              completedAt: record.completedAt,
            },
          },
        },
      },
      {
        what: 'erasure_progress',
        action: {
          Delete: {
            TableName: tableName(),
            Key: erasureKeys.progress(accountId, record.id),
            ConditionExpression: 'step = :read',
            ExpressionAttributeValues: { ':read': progress.step },
          },
        },
        refused: () => new ErasureStepTaken(),
      },
    ],
    additions: [],
    attached: [],
    events: { accountId, drafts: [event], reserved: [] },
  });
}

/** Every ledger entry (the replay's list): the account, the erasure's id and its hash. */
export async function ledgerEntries(
  table = tableName(),
): Promise<{ accountId: string; id: string; hash: string }[]> {
  const items = await queryAll({
    TableName: table,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': erasureKeys.ledgerPartition },
    ConsistentRead: true,
  });
  return items.map((i) => ({ accountId: String(i.accountId), id: String(i.id), hash: String(i.hash) }));
}

/** Writes a ledger entry again (the replay copies the ledger of the table that was live into a restored one). */
export async function putLedgerEntry(entry: { accountId: string; id: string; hash: string }): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...erasureKeys.ledger(entry.accountId, entry.id), type: 'erasure_ledger', ...entry },
    }),
  );
}
