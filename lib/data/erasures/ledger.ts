import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { EventDraft } from '../events.ts';
import { writePlan } from '../index/write-plan.ts';
import { erasureKeys } from '../keys.ts';
import { dynamo, queryAll, tableName } from '../store/client.ts';
import { transact } from '../store/transact.ts';
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

export interface LedgerEntry {
  accountId: string;
  id: string;
  hash: string;
}

const entryOf = (i: Record<string, unknown>): LedgerEntry => ({
  accountId: String(i.accountId),
  id: String(i.id),
  hash: String(i.hash),
});

/**
 * Every ledger entry of `table` (the replay's list): the accounts the listing's 16 shards name (gsi2, keys only;
 * an entry written in the last second may not be listed yet), each account's partition read consistently, and the
 * legacy partition beside them (until 2027-03-31: docs/deploy.md), each entry once.
 */
export async function ledgerEntries(table = tableName()): Promise<LedgerEntry[]> {
  const listed = await Promise.all(
    erasureKeys.ledgerShards.map((shard) =>
      queryAll({
        TableName: table,
        IndexName: erasureKeys.ledgerIndex,
        KeyConditionExpression: 'gsi2pk = :pk',
        ExpressionAttributeValues: { ':pk': shard },
      }),
    ),
  );
  const accounts = new Set(listed.flat().map((i) => erasureKeys.accountOfListed(String(i.gsi2sk))));
  const partitions = [...[...accounts].map(erasureKeys.ledgerPartition), erasureKeys.legacyLedgerPartition];
  const byKey = new Map<string, LedgerEntry>();
  for (const pk of partitions) {
    const items = await queryAll({
      TableName: table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      ConsistentRead: true,
    });
    for (const entry of items.map(entryOf)) byKey.set(`${entry.accountId}#${entry.id}`, entry);
  }
  return [...byKey.values()];
}

/** Writes a ledger entry again (the replay copies the ledger of the table that was live into a restored one). */
export async function putLedgerEntry(entry: LedgerEntry): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...erasureKeys.ledger(entry.accountId, entry.id), type: 'erasure_ledger', ...entry },
    }),
  );
}

/**
 * Moves up to `limit` entries of the legacy partition (`ERASURE_LEDGER`, every account's) to their account's keys,
 * each in one transaction (the new entry put, the old one deleted): the erasure runner calls it every run until the
 * legacy partition is empty (docs/deploy.md, "The erasure ledger's keys"). Answers how many it moved.
 */
export async function moveLegacyLedger(limit = 100): Promise<number> {
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': erasureKeys.legacyLedgerPartition },
      ConsistentRead: true,
    },
    limit,
  );
  for (const item of items) {
    const { pk, sk, ...kept } = item;
    const entry = entryOf(item);
    await transact([
      {
        Put: { TableName: tableName(), Item: { ...kept, ...erasureKeys.ledger(entry.accountId, entry.id) } },
      },
      { Delete: { TableName: tableName(), Key: { pk, sk } } },
    ]);
  }
  return items.length;
}
