import { GetCommand } from '@aws-sdk/lib-dynamodb';
import type { PageRequest } from '#lib/pagination.ts';
import { webhookDeliveryKeys as keys, webhookKeys } from '../keys.ts';
import { dynamo, queryAll, tableName } from '../store/client.ts';
import { EndpointNotFound } from '../webhooks/webhooks.ts';
import { DISPATCH_ATTR } from './leases.ts';

/** The attempt item, one per attempt, numbered in recording order: the deliveries log (../webhook-deliveries.ts). */

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

/** The newest attempts kept per endpoint (the deliveries log). */
export const ATTEMPTS_KEPT = 10_000;

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
 * `perPage`, and the exact total. Two reads: the endpoint's attempt count, then one range of the log.
 * EndpointNotFound when the endpoint is not there.
 */
export async function listDeliveryAttempts(
  accountId: string,
  endpointId: string,
  page: Pick<PageRequest, 'page' | 'perPage'>,
): Promise<AttemptPage> {
  const count = await attemptCountOf(accountId, endpointId);
  if (count === undefined) throw new EndpointNotFound();
  const oldestKept = Math.max(1, count - ATTEMPTS_KEPT + 1);
  const total = count - oldestKept + 1;
  const newest = count - (page.page - 1) * page.perPage;
  const oldest = Math.max(oldestKept, newest - page.perPage + 1);
  if (newest < oldestKept) return { data: [], total: Math.max(0, total) };
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :oldest AND :newest',
    ExpressionAttributeValues: {
      ':pk': keys.attemptsPartition(accountId, endpointId),
      ':oldest': keys.attemptSort(oldest),
      ':newest': keys.attemptSort(newest),
    },
    ScanIndexForward: false,
    ConsistentRead: true,
  });
  return { data: items.map(attemptOf), total };
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

/** The endpoint's count of recorded attempts (after LogNumberTaken), or undefined when it is gone. */
export async function attemptCountOf(accountId: string, endpointId: string): Promise<number | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: tableName(),
      Key: webhookKeys.endpoint(accountId, endpointId),
      ProjectionExpression: `pk, ${DISPATCH_ATTR.attemptCount}`,
      ConsistentRead: true,
    }),
  );
  return Item ? Number(Item[DISPATCH_ATTR.attemptCount] ?? 0) : undefined;
}
