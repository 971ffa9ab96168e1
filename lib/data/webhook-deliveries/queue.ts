import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import type { EventSummary } from '../events.ts';
import { webhookDeliveryKeys as keys, webhookKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure, itemOnConditionFailure, retryOnConflict } from '../store/errors.ts';
import { queueDelivery } from './delivery.ts';
import { DISPATCH_ATTR as E } from './leases.ts';

/**
 * The writes of pending deliveries (the fan-out's, a redelivery's), and the due entry's bump that follows every
 * writer of them.
 */

/** What a delivery needs of its event: its id (the delivery's key and `webhook-id`) and type. */
export type EventToDeliver = Pick<EventSummary, 'id' | 'type'>;

/**
 * The fan-out's write: a pending delivery of each event to the endpoint, due now, then the endpoint's due entry.
 * A delivery that exists already (a stream record fanned out again) is left as it is. Answers how many were
 * created; 0 when the endpoint is gone.
 */
export async function addDeliveries(
  accountId: string,
  endpointId: string,
  events: EventToDeliver[],
  now = nowMillis(),
  /** Runs each write within a bound the caller shares with its other writes (the fan-out's for its batch). */
  within: <T>(write: () => Promise<T>) => Promise<T> = (write) => write(),
): Promise<number> {
  const created = await inParallel(events, (event) =>
    within(() => queueDelivery(accountId, endpointId, event, now, 'new')),
  );
  // Also when none was created: a fan-out repeated after a crash between its puts and this write finishes it.
  if (events.length > 0) await markDue(accountId, endpointId, now);
  return created.filter(Boolean).length;
}

/**
 * A redelivery's write: each event's delivery made pending again, due now (one that ended is reopened for a new
 * round; one waiting for its retry is brought forward; one being attempted is left to that attempt), then the
 * endpoint's due entry.
 */
export async function reopenDeliveries(
  accountId: string,
  endpointId: string,
  events: EventToDeliver[],
): Promise<void> {
  const now = nowMillis();
  await inParallel(events, (event) => queueDelivery(accountId, endpointId, event, now, 'again'));
  if (events.length > 0) await markDue(accountId, endpointId, now);
}

/**
 * After pending items were written: bumps the endpoint's `dueVersion`, and lowers its due entry to `dueAt` when
 * that is earlier and no live lease holds the endpoint (its holder finds the new items itself, and its release
 * sees the bump). Answers false when the endpoint is gone.
 */
export async function markDue(accountId: string, endpointId: string, dueAt: number): Promise<boolean> {
  const now = nowMillis();
  const due = keys.due(accountId, endpointId, dueAt);
  const key = webhookKeys.endpoint(accountId, endpointId);
  try {
    await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: key,
          // The entry lowered when it is later or absent.
          UpdateExpression: `SET gsi2pk = :pk, gsi2sk = :sk ADD ${E.dueVersion} :one`,
          ConditionExpression:
            'attribute_exists(pk) AND (attribute_not_exists(gsi2sk) OR gsi2sk > :sk) AND ' +
            `(attribute_not_exists(${E.leaseUntil}) OR ${E.leaseUntil} < :now)`,
          ExpressionAttributeValues: { ':pk': due.gsi2pk, ':sk': due.gsi2sk, ':one': 1, ':now': now },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    return true;
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    if (!itemOnConditionFailure(error)) return false;
  }
  try {
    await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: key,
          UpdateExpression: `ADD ${E.dueVersion} :one`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1 },
        }),
      ),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Pending items written at once by one fan-out or redeliver. */
const WRITE_CONCURRENCY = 16;

/** Runs `work` over `list`, `atOnce` at a time (WRITE_CONCURRENCY by default); answers the results in order. */
export async function inParallel<T, R>(
  list: readonly T[],
  work: (item: T) => Promise<R>,
  atOnce = WRITE_CONCURRENCY,
): Promise<R[]> {
  const results: R[] = new Array(list.length);
  let next = 0;
  const lane = async () => {
    while (next < list.length) {
      const i = next++;
      results[i] = await work(list[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, list.length) }, lane));
  return results;
}
