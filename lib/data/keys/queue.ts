import type { IndexName } from '../store/table.ts';
import { dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs, padId } from './sort.ts';

/**
 * The queue's freed entries (docs/data-model.md, "The queue"): one item per (account, agent) that may have freed
 * up, with its due entry in gsi2 (keys only, one of DUE_SHARDS partitions, sorted by when it is due), which the
 * queue runner reads (lib/tickets/queue-runner.ts), never a Scan. A second freeing before the runner came
 * overwrites the same item: an agent is served once for any number of reasons.
 */
export const queueKeys = {
  freed: (accountId: string, agentId: number) => ({ pk: `QUEUE_FREED#${accountId}`, sk: padId(agentId) }),
  freedDue: (accountId: string, agentId: number, atMs: number) => ({
    gsi2pk: `QUEUE_FREED_DUE#${dueShardOf(accountId, String(agentId))}`,
    gsi2sk: `${dueMs(atMs)}#${accountId}#${agentId}`,
  }),
  freedDuePartition: (shard: number) => `QUEUE_FREED_DUE#${shard}`,
  freedDueIndex: 'gsi2' as IndexName,
  freedDueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  parseFreedDue: (sk: string) => {
    const [, accountId, agentId] = sk.split('#');
    return { accountId: accountId ?? '', agentId: Number(agentId) };
  },
};
