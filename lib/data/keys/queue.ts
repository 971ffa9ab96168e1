import type { IndexName } from '../store/table.ts';
import { dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs, padId } from './sort.ts';

/** The team wake's name where an agent's id stands (its item's sort key, its due key's third part). */
const TEAMS = 'TEAMS';

/**
 * The queue's freed entries (docs/data-model.md, "Tickets"): one item per (account, agent) that may have freed
 * up, with its due entry in gsi2 (keys only, one of DUE_SHARDS partitions, sorted by when it is due), which the
 * queue runner reads (lib/tickets/queue-runner.ts), never a Scan. A second freeing before the runner came
 * overwrites the same item: an agent is served once for any number of reasons. Beside them, one item per account,
 * the team wake (`TEAMS`): the teams a change left with no active agent, whose waiting tickets the runner hands to
 * the account's agents with room.
 */
export const queueKeys = {
  freed: (accountId: string, agentId: number) => ({ pk: `QUEUE_FREED#${accountId}`, sk: padId(agentId) }),
  /**
   * `mark`: the freeing's own (lib/data/tickets/freed.ts): two freeings in one millisecond (two changes at once, a
   * clock standing still) differ by it, so the runner's delete of the one it read never removes the other.
   */
  freedDue: (accountId: string, agentId: number, atMs: number, mark = '') => ({
    gsi2pk: `QUEUE_FREED_DUE#${dueShardOf(accountId, String(agentId))}`,
    gsi2sk: `${dueMs(atMs)}#${accountId}#${agentId}#${mark}`,
  }),
  /** The account's team wake: `agentId` null (lib/data/tickets/team-wake.ts). */
  wake: (accountId: string) => ({ pk: `QUEUE_FREED#${accountId}`, sk: TEAMS }),
  wakeDue: (accountId: string, atMs: number, mark = '') => ({
    gsi2pk: `QUEUE_FREED_DUE#${dueShardOf(accountId, TEAMS)}`,
    gsi2sk: `${dueMs(atMs)}#${accountId}#${TEAMS}#${mark}`,
  }),
  freedDuePartition: (shard: number) => `QUEUE_FREED_DUE#${shard}`,
  freedDueIndex: 'gsi2' as IndexName,
  freedDueBefore: (atMs: number) => `${dueMs(atMs + 1)}#`,
  /** `agentId` null: the account's team wake. `mark` as written (a rotation's place after it: freed.ts). */
  parseFreedDue: (sk: string) => {
    const [, accountId, agentId, mark] = sk.split('#');
    return {
      accountId: accountId ?? '',
      agentId: agentId === TEAMS ? null : Number(agentId),
      mark: mark ?? '',
    };
  },
};
