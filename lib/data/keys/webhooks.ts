import type { IndexName } from '../store/table.ts';
import { DUE_SHARDS, dueShardOf } from '../webhooks/due-shards.ts';
import { dueMs } from './sort.ts';

/**
 * Webhook endpoints (docs/webhooks.md, "Items"): one partition per account holding its endpoints, sorted by id (a
 * time-ordered id, so the partition reads oldest first), and the item that counts them (at most MAX_ENDPOINTS).
 */
export const webhookKeys = {
  partition: (accountId: string) => `WEBHOOKS#${accountId}`,
  endpoint: (accountId: string, endpointId: string) => ({
    pk: `WEBHOOKS#${accountId}`,
    sk: `ENDPOINT#${endpointId}`,
  }),
  /** The sort key prefix of every endpoint of the partition (the count item sorts apart). */
  endpointPrefix: 'ENDPOINT#',
  count: (accountId: string) => ({ pk: `WEBHOOKS#${accountId}`, sk: 'COUNT' }),
};

/**
 * The webhook dispatcher's items (docs/webhooks.md, "Items"): per (account, endpoint) a delivery per event, its
 * pending deliveries by due time, its attempts log by time and its counts; the due index (gsi2, keys only, DUE_SHARDS partitions): one
 * entry per endpoint with pending deliveries, on the endpoint item itself; the local stream reader's checkpoints.
 */
export const webhookDeliveryKeys = {
  /** A delivery of one event to one endpoint: its state, attempt count, next attempt, last answer. */
  delivery: (accountId: string, endpointId: string, eventId: string) => ({
    pk: `WEBHOOK_DELIVERY#${accountId}#${endpointId}`,
    sk: eventId,
  }),
  /** A pending delivery, sorted by when it is due: what an endpoint has due now is one Query. */
  pendingPartition: (accountId: string, endpointId: string) => `WEBHOOK_PENDING#${accountId}#${endpointId}`,
  pending: (accountId: string, endpointId: string, dueAt: number, eventId: string) => ({
    pk: `WEBHOOK_PENDING#${accountId}#${endpointId}`,
    sk: `${dueMs(dueAt)}#${eventId}`,
  }),
  /** The sort key bound of the pending deliveries due at or before `at` (sk < this). */
  pendingDueBefore: (at: number) => `${dueMs(at + 1)}#`,
  /** A pending item's sort key read back. */
  parsePending: (sk: string) => {
    const [due, eventId] = sk.split('#');
    return { dueAt: Number(due), eventId: eventId ?? '' };
  },
  /**
   * An attempt in the endpoint's log, by when it started, then its delivery and its number among the delivery's
   * attempts (unique without any number shared by the endpoint's attempts): newest first is a descending Query.
   */
  attemptsPartition: (accountId: string, endpointId: string) => `WEBHOOK_ATTEMPTS#${accountId}#${endpointId}`,
  attempt: (accountId: string, endpointId: string, at: number, eventId: string, attempt: number) => ({
    pk: `WEBHOOK_ATTEMPTS#${accountId}#${endpointId}`,
    sk: `${dueMs(at)}#${eventId}#${String(attempt).padStart(6, '0')}`,
  }),
  /**
   * One of the log's counts (`n`): lane `lane`'s (the attempts recorded on it, lib/webhooks/due.ts) or the trim's
   * (`trim`, negative: the attempts dropped). The log's total is their sum. A partition of their own: the log's
   * partition takes its puts and its trim's deletes, the counts as many writes again.
   */
  attemptCountsPartition: (accountId: string, endpointId: string) =>
    `WEBHOOK_ATTEMPT_COUNTS#${accountId}#${endpointId}`,
  attemptCount: (accountId: string, endpointId: string, lane: number | 'trim') => ({
    pk: `WEBHOOK_ATTEMPT_COUNTS#${accountId}#${endpointId}`,
    sk: lane === 'trim' ? lane : String(lane).padStart(2, '0'),
  }),
  /** gsi2 (keys only) entry of an endpoint with pending deliveries: in its due partition, sorted by its earliest due. */
  due: (accountId: string, endpointId: string, dueAt: number) => ({
    gsi2pk: webhookDeliveryKeys.duePartitions[dueShardOf(accountId, endpointId)] as string,
    gsi2sk: `${dueMs(dueAt)}#${accountId}#${endpointId}`,
  }),
  /** The due partitions: one per shard (lib/data/webhooks/due-shards.ts says why), sorted by the entries' due. */
  duePartitions: Array.from({ length: DUE_SHARDS }, (_, shard) => `WEBHOOK_DUE#${shard}`),
  dueIndex: 'gsi2' as IndexName,
  /** The due sort key bound of the endpoints due at or before `at` (gsi2sk < this). */
  dueBefore: (at: number) => `${dueMs(at + 1)}#`,
  /** A due entry's sort key read back. */
  parseDue: (gsi2sk: string) => {
    const [due, accountId, endpointId] = gsi2sk.split('#');
    return { dueAt: Number(due), accountId: accountId ?? '', endpointId: endpointId ?? '' };
  },
  /** The local stream reader's checkpoint of one shard (infra/local/webhooks.ts). */
  streamCheckpoint: (consumer: string, streamArn: string, shardId: string) => ({
    pk: `STREAM_CHECKPOINT#${consumer}#${streamArn}`,
    sk: shardId,
  }),
};
