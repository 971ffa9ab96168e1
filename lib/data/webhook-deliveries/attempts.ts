import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { PageRequest } from '#lib/pagination.ts';
import { webhookDeliveryKeys as keys, webhookKeys } from '../keys.ts';
import { dynamo, queryAll, tableName } from '../store/client.ts';
import { isConditionFailure, isTransactionConflict } from '../store/errors.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { EndpointNotFound } from '../webhooks/webhooks.ts';

/**
 * The attempt item, one per attempt, keyed by its start, its delivery and its number among the delivery's attempts,
 * and the log's counts: the deliveries log (../webhook-deliveries.ts).
 */

export const ATTEMPT_TYPE = 'webhook_attempt';

/** The attempt item's attributes beside its keys: their one spelling. */
export const ATTEMPT_ATTR = {
  eventId: 'eventId',
  eventType: 'eventType',
  attempt: 'attempt',
  at: 'at',
  status: 'status',
  error: 'error',
  durationMs: 'durationMs',
  nextAttemptAt: 'nextAttemptAt',
} as const;
const T = ATTEMPT_ATTR;

/** The newest attempts kept per endpoint (the deliveries log), and how many more it may hold between two trims. */
export const ATTEMPTS_KEPT = 10_000;
export const TRIM_BATCH = 100;

/**
 * The log's count lanes: an attempt's record adds one to its lane's count, in its own transaction. The runner records
 * one attempt at a time on a lane (lib/webhooks/due.ts: lane i of an endpoint's loop is its i-th attempt slot), so
 * two records of one holder never write one count at once (a transaction conflict), and the endpoint's records go
 * out concurrently; the total is the sum of the lanes' counts, one Query of their partition.
 */
export const LOG_LANES = 64;
const COUNT = 'n';

/** One attempt, as the deliveries log lists it. */
export interface DeliveryAttempt {
  eventId: string;
  eventType: string;
  /** The attempt's number among the delivery's attempts (continuing over redeliveries). */
  attempt: number;
  /** Epoch ms when the attempt started. */
  at: number;
  /** The receiver's status code, or null when there was none (timeout, refused, refused by the URL policy). */
  status: number | null;
  /** What went wrong without a status (`timeout`, `connection_refused`, `url_refused: …`), or null. */
  error: string | null;
  durationMs: number;
  /** Epoch ms of the next attempt, or null when none follows (succeeded, or failed for good). */
  nextAttemptAt: number | null;
}

export interface AttemptPage {
  data: DeliveryAttempt[];
  /** Every attempt of the log (the newest ATTEMPTS_KEPT): exact. */
  total: number;
}

/**
 * The deliveries log of an endpoint (the listWebhookDeliveries route): attempts newest first, `page` of
 * `perPage`, and the exact total (the sum of the log's counts). Page n reads the newest n × perPage attempts (~200
 * bytes each): the log is keyed by time, not numbered, so that no number is shared by the endpoint's records.
 * EndpointNotFound when the endpoint is not there.
 */
export async function listDeliveryAttempts(
  accountId: string,
  endpointId: string,
  page: Pick<PageRequest, 'page' | 'perPage'>,
): Promise<AttemptPage> {
  const [exists, total] = await Promise.all([
    endpointExists(accountId, endpointId),
    attemptTotal(accountId, endpointId),
  ]);
  if (!exists) throw new EndpointNotFound();
  const skip = (page.page - 1) * page.perPage;
  if (skip >= total) return { data: [], total };
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.attemptsPartition(accountId, endpointId) },
      ScanIndexForward: false,
      ConsistentRead: true,
    },
    skip + page.perPage,
  );
  return { data: items.slice(skip).map(attemptOf), total };
}

function attemptOf(item: Record<string, unknown>): DeliveryAttempt {
  return {
    eventId: String(item[T.eventId]),
    eventType: String(item[T.eventType]),
    attempt: Number(item[T.attempt]),
    at: Number(item[T.at]),
    status: item[T.status] == null ? null : Number(item[T.status]),
    error: item[T.error] == null ? null : String(item[T.error]),
    durationMs: Number(item[T.durationMs]),
    nextAttemptAt: item[T.nextAttemptAt] == null ? null : Number(item[T.nextAttemptAt]),
  };
}

async function endpointExists(accountId: string, endpointId: string): Promise<boolean> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: tableName(),
      Key: webhookKeys.endpoint(accountId, endpointId),
      ProjectionExpression: 'pk',
      ConsistentRead: true,
    }),
  );
  return Item !== undefined;
}

/** The attempts the endpoint's log holds: the sum of its counts (one Query of at most LOG_LANES + 1 small items). */
export async function attemptTotal(accountId: string, endpointId: string): Promise<number> {
  return (await attemptCounts(accountId, endpointId)).total;
}

/** The log's total, and what the trims have counted off so far (the `trim` item: only trims write it). */
async function attemptCounts(
  accountId: string,
  endpointId: string,
): Promise<{ total: number; trimmed: number }> {
  const counts = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.attemptCountsPartition(accountId, endpointId) },
    ConsistentRead: true,
  });
  const trim = counts.find((item) => item.sk === keys.attemptCount(accountId, endpointId, 'trim').sk);
  return {
    total: counts.reduce((sum, item) => sum + Number(item[COUNT] ?? 0), 0),
    trimmed: trim ? Number(trim[COUNT] ?? 0) : 0,
  };
}

/** A record's commit action: one more attempt on lane `lane`'s count. */
export function countAttempt(accountId: string, endpointId: string, lane: number): CommitAction {
  return {
    what: 'webhook_attempt_count',
    action: {
      Update: {
        TableName: tableName(),
        Key: keys.attemptCount(accountId, endpointId, lane),
        UpdateExpression: 'ADD #n :one',
        ExpressionAttributeNames: { '#n': COUNT },
        ExpressionAttributeValues: { ':one': 1 },
      },
    },
  };
}

/**
 * Keeps the newest ATTEMPTS_KEPT attempts of the log once it holds TRIM_BATCH more: the oldest go, TRIM_BATCH at a
 * time, each batch in one transaction with its count taken off the trim's count, so the total stays the log's
 * exact size. Each delete is conditional on the attempt being there: a batch another trim took first (two holders
 * of one endpoint, one of them stalled) is refused, and read again. Answers how many were dropped. TTL would drop
 * attempts behind the counts' back.
 */
export async function trimAttempts(
  accountId: string,
  endpointId: string,
  /** The newest kept (ATTEMPTS_KEPT; a test keeps fewer rather than write 10,000). */
  kept = ATTEMPTS_KEPT,
): Promise<number> {
  let dropped = 0;
  for (let rounds = 0; rounds < 1_000; rounds++) {
    const { total, trimmed } = await attemptCounts(accountId, endpointId);
    const over = total - kept;
    if (over < (dropped === 0 ? TRIM_BATCH : 1)) return dropped;
    const oldest = await queryAll(
      {
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.attemptsPartition(accountId, endpointId) },
        ProjectionExpression: 'pk, sk',
        ConsistentRead: true,
      },
      Math.min(over, TRIM_BATCH - 1),
    );
    if (oldest.length === 0) return dropped;
    const actions: CommitAction[] = [
      ...oldest.map(
        (key): CommitAction => ({
          what: 'webhook_attempt_dropped',
          action: {
            Delete: {
              TableName: tableName(),
              Key: { pk: key.pk, sk: key.sk },
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
        }),
      ),
      {
        what: 'webhook_attempt_count',
        action: {
          Update: {
            TableName: tableName(),
            Key: keys.attemptCount(accountId, endpointId, 'trim'),
            UpdateExpression: 'ADD #n :minus',
            // Only if no other trim counted off since this one counted: `over` is then still true (records only add
            // to it), so the oldest `over` keys are never the newest kept. Two trims at once, the second having
            // counted before the first committed, would otherwise drop the next oldest too (seen at load ~25).
            ConditionExpression: trimmed === 0 ? 'attribute_not_exists(#n) OR #n = :seen' : '#n = :seen',
            ExpressionAttributeNames: { '#n': COUNT },
            ExpressionAttributeValues: { ':minus': -oldest.length, ':seen': trimmed },
          },
        },
      },
    ];
    try {
      await commit(actions);
      dropped += oldest.length;
    } catch (error) {
      if (!isConditionFailure(error) && !isTransactionConflict(error)) throw error;
    }
  }
  return dropped;
}
