import type { PageRequest } from '#lib/pagination.ts';
import { queryAll, tableName } from '../client.ts';
import { webhookDeliveryKeys as keys } from '../keys.ts';
import { EndpointNotFound } from '../webhooks.ts';
import { ATTEMPTS_KEPT, type DeliveryAttempt } from './items.ts';
import { attemptCountOf } from './record.ts';

/** The deliveries log: an endpoint's attempts, newest first, one range read a page. */

export interface AttemptPage {
  data: DeliveryAttempt[];
  /** Every attempt of the log (the newest ATTEMPTS_KEPT): exact. */
  total: number;
}

/**
 * The deliveries log of an endpoint (GET /api/webhooks/{id}/deliveries): attempts newest first, `page` of
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
    eventId: String(item.eventId),
    eventType: String(item.eventType),
    attempt: Number(item.attempt),
    at: Number(item.at),
    status: item.status == null ? null : Number(item.status),
    error: item.error == null ? null : String(item.error),
    durationMs: Number(item.durationMs),
    nextAttemptAt: item.nextAttemptAt == null ? null : Number(item.nextAttemptAt),
  };
}
