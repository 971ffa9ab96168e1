import { nowMillis } from '#lib/time.ts';
import { webhookDeliveryKeys as keys } from '../keys.ts';
import { tableName } from '../store/client.ts';
import { retryOnConflict } from '../store/errors.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { ATTEMPT_TYPE, countAttempt, type DeliveryAttempt, ATTEMPT_ATTR as T } from './attempts.ts';
import { DELIVERY_ATTR as D, type Delivery, retentionFrom, STATE_NAME } from './delivery.ts';
import { putPending, removePending } from './pending.ts';

/**
 * Recording an attempt's outcome in one transaction of the delivery's own items, its log entry and its lane's count:
 * nothing the endpoint's other deliveries write, so an endpoint's records go out concurrently (docs/webhooks.md,
 * "Items"). What the outcome changes of the endpoint item (its marks) is written apart: ./marks.ts.
 */

/** One attempt's outcome, recorded by the claim's holder. */
export interface AttemptRecord {
  accountId: string;
  endpointId: string;
  owner: string;
  /** The claimed delivery (its attempts count before this one) and the due of the pending item it came from. */
  delivery: Delivery;
  dueAt: number;
  attempt: Omit<DeliveryAttempt, 'eventId' | 'eventType' | 'attempt' | 'nextAttemptAt'>;
  /** The delivery after this attempt: pending again at nextAt, or ended. */
  next: { state: 'pending'; nextAt: number } | { state: 'succeeded' } | { state: 'failed' };
  /** The log's count lane the attempt is counted on (attempts.ts, LOG_LANES): its slot in the runner's loop. */
  lane: number;
}

/** The claim on the delivery was lost (expired and taken by another runner): nothing was recorded. */
export class ClaimLost extends Error {
  constructor() {
    super('The delivery is no longer claimed by this runner');
  }
}

/**
 * Records an attempt in one transaction: the delivery's new state (and the end of its claim), its pending item
 * moved to the next due or deleted, the attempt in the endpoint's log and its lane's count. Throws ClaimLost.
 */
export async function recordAttempt(record: AttemptRecord): Promise<void> {
  const { accountId, endpointId, delivery, next, attempt } = record;
  const now = nowMillis();
  const number = delivery.attempts + 1;
  // Never the pending item's own key again (a transaction cannot delete and put one item).
  const nextAt = next.state === 'pending' ? Math.max(next.nextAt, record.dueAt + 1) : null;
  const expiresAt = retentionFrom(now);
  const actions: CommitAction[] = [
    {
      what: 'webhook_delivery',
      action: {
        Update: {
          TableName: tableName(),
          Key: keys.delivery(accountId, endpointId, delivery.eventId),
          UpdateExpression:
            `SET #state = :state, ${D.attempts} = :n, ${D.nextAt} = :nextAt, ${D.lastStatus} = :status, ` +
            `${D.lastError} = :error, ${D.lastAttemptAt} = :at, ${D.updatedAt} = :now, ${D.expiresAt} = :expires ` +
            `REMOVE ${D.leaseOwner}, ${D.leaseUntil}`,
          ConditionExpression: `${D.leaseOwner} = :owner AND ${D.attempts} = :before`,
          ExpressionAttributeNames: STATE_NAME,
          ExpressionAttributeValues: {
            ':state': next.state,
            ':n': number,
            ':nextAt': nextAt,
            ':status': attempt.status,
            ':error': attempt.error,
            ':at': attempt.at,
            ':now': now,
            ':expires': expiresAt,
            ':owner': record.owner,
            ':before': delivery.attempts,
          },
        },
      },
      refused: () => new ClaimLost(),
    },
    removePending(accountId, endpointId, record.dueAt, delivery.eventId),
    ...(nextAt === null
      ? []
      : [putPending('webhook_pending_next', accountId, endpointId, nextAt, delivery, retentionFrom(nextAt))]),
    {
      what: 'webhook_attempt',
      action: {
        Put: {
          TableName: tableName(),
          Item: {
            ...keys.attempt(accountId, endpointId, attempt.at, delivery.eventId, number),
            type: ATTEMPT_TYPE,
            [T.eventId]: delivery.eventId,
            [T.eventType]: delivery.eventType,
            [T.attempt]: number,
            [T.at]: attempt.at,
            [T.status]: attempt.status,
            [T.error]: attempt.error,
            [T.durationMs]: attempt.durationMs,
            [T.nextAttemptAt]: nextAt,
          },
          // Once: the delivery's condition above already makes (delivery, number) this record's alone.
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      refused: () => new ClaimLost(),
    },
    countAttempt(accountId, endpointId, record.lane),
  ];
  await retryOnConflict(() => commit(actions));
}
