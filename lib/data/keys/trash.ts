import type { IndexName } from '../store/table.ts';
import { dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs } from './sort.ts';

/**
 * The trash (decisions.md, "Deleting, restoring and erasing"): one item per deleted object in the account's trash
 * partition, keyed by the object's uuid (a restore reads it by key, strongly consistent), holding the object as it
 * was. gsi1 lists an account's trash per type, newest deletion first; gsi2 (keys only) is its purge due entry, in
 * one of DUE_SHARDS partitions, sorted by the purge time, which the purge runner reads (never a Scan).
 */
export const trashKeys = {
  partition: (accountId: string) => `TRASH#${accountId}`,
  item: (accountId: string, uuid: string) => ({ pk: `TRASH#${accountId}`, sk: uuid }),
  /** gsi1: the trash of one type, newest deletion first (deletion microseconds, 17 digits, then the uuid). */
  listed: (accountId: string, type: string, deletedMicros: number, uuid: string) => ({
    gsi1pk: `TRASH#${accountId}#${type}`,
    gsi1sk: `${String(deletedMicros).padStart(17, '0')}#${uuid}`,
  }),
  listPartition: (accountId: string, type: string) => `TRASH#${accountId}#${type}`,
  listIndex: 'gsi1' as IndexName,
  /** gsi2: the purge due entry (purge time in epoch ms, 15 digits; then account and uuid). */
  purgeDue: (accountId: string, uuid: string, purgeMicros: number) => ({
    gsi2pk: `PURGE_DUE#${dueShardOf(accountId, uuid)}`,
    gsi2sk: `${dueMs(purgeMicros / 1000)}#${accountId}#${uuid}`,
  }),
  purgeDuePartition: (shard: number) => `PURGE_DUE#${shard}`,
  purgeDueIndex: 'gsi2' as IndexName,
  purgeDueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  parsePurgeDue: (sk: string) => {
    const [, accountId, uuid] = sk.split('#');
    return { accountId: accountId ?? '', uuid: uuid ?? '' };
  },
};
