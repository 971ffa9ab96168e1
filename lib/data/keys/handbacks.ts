import type { IndexName } from '../store/table.ts';
import { dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs } from './sort.ts';

/**
 * Hand-backs (docs/data-model.md, "People"): what a retirement or a team change owes, an item per people commit in
 * the account's own partition until the runner has unassigned every ticket it names, with its due entry in gsi2
 * (keys only, one of DUE_SHARDS partitions, sorted by when it is next due), which the runner reads, never a Scan.
 */
const partition = (accountId: string) => `HANDBACKS#${accountId}`;

export const handBackKeys = {
  handBack: (accountId: string, id: string) => ({ pk: partition(accountId), sk: `HANDBACK#${id}` }),
  due: (accountId: string, id: string, atMs: number) => ({
    gsi2pk: `HANDBACK_DUE#${dueShardOf(accountId, id)}`,
    gsi2sk: `${dueMs(atMs)}#${accountId}#${id}`,
  }),
  duePartition: (shard: number) => `HANDBACK_DUE#${shard}`,
  dueIndex: 'gsi2' as IndexName,
  dueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  parseDue: (sk: string) => {
    const [, accountId, id] = sk.split('#');
    return { accountId: accountId ?? '', id: id ?? '' };
  },
};
