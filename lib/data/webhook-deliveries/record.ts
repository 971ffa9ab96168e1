import { formatTimestamp, nowMillis } from '#lib/time.ts';
import { webhookDeliveryKeys as keys, webhookKeys } from '../keys.ts';
import { tableName } from '../store/client.ts';
import { retryOnConflict } from '../store/errors.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { EndpointNotFound, ENDPOINT_ATTR as EP } from '../webhooks/webhooks.ts';
import { ATTEMPT_TYPE, ATTEMPTS_KEPT, type DeliveryAttempt, ATTEMPT_ATTR as T } from './attempts.ts';
import { DELIVERY_ATTR as D, type Delivery, retentionFrom, STATE_NAME } from './delivery.ts';
import { DISPATCH_ATTR } from './leases.ts';
import { putPending, removePending } from './pending.ts';

/** Recording an attempt's outcome in one transaction. */

/** What an attempt's record changes of the endpoint. */
export type EndpointOutcome =
  | { kind: 'success' }
  | { kind: 'failure' }
  /** A failure that disables the endpoint (410, or failing for DISABLE_AFTER_MS). */
  | { kind: 'disable'; reason: string };

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
  endpoint: EndpointOutcome;
  /** This attempt's number in the endpoint's log: the holder's attemptCount + 1. */
  logNumber: number;
  /**
   * A failure: since when the endpoint has been failing (the first failure since its last success), as its holder
   * knows it when recording; null or absent: since this attempt.
   */
  failingSince?: number | null;
}

/** The attempt's number in the endpoint's log was taken (the count moved since it was read): read it, again. */
export class LogNumberTaken extends Error {
  constructor() {
    super("The attempt's log number was taken");
  }
}

/** The claim on the delivery was lost (expired and taken by another runner): nothing was recorded. */
export class ClaimLost extends Error {
  constructor() {
    super('The delivery is no longer claimed by this runner');
  }
}

/**
 * Records an attempt in one transaction: the delivery's new state (and the end of its claim), its pending item
 * moved to the next due or deleted, the attempt in the endpoint's log (and the oldest kept one dropped), the
 * endpoint's count, success or failure marks, and disabling. Throws ClaimLost, LogNumberTaken, or
 * EndpointNotFound (the endpoint was deleted: nothing to record).
 */
export async function recordAttempt(record: AttemptRecord): Promise<void> {
  const { accountId, endpointId, delivery, next, attempt, logNumber } = record;
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
            ...keys.attempt(accountId, endpointId, logNumber),
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
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      refused: () => new LogNumberTaken(),
    },
    ...(logNumber > ATTEMPTS_KEPT
      ? [
          {
            what: 'webhook_attempt_dropped',
            action: {
              Delete: {
                TableName: tableName(),
                Key: keys.attempt(accountId, endpointId, logNumber - ATTEMPTS_KEPT),
              },
            },
          },
        ]
      : []),
    endpointUpdate(record, now),
  ];
  await retryOnConflict(() => commit(actions));
}

function endpointUpdate(record: AttemptRecord, now: number): CommitAction {
  const count = DISPATCH_ATTR.attemptCount;
  const sets = [`${count} = :count`];
  const values: Record<string, unknown> = { ':count': record.logNumber };
  if (record.endpoint.kind === 'success') {
    sets.push(`${EP.lastSuccessAt} = :now`, `${EP.failingSince} = :null`);
    values[':now'] = now;
    values[':null'] = null;
  } else {
    sets.push(`${EP.failingSince} = :since`);
    values[':since'] = record.failingSince ?? record.attempt.at;
    if (record.endpoint.kind === 'disable') {
      sets.push(`${EP.enabled} = :false`, `${EP.disabledReason} = :reason`, `${EP.updatedAt} = :updated`);
      values[':false'] = false;
      values[':reason'] = record.endpoint.reason;
      values[':updated'] = formatTimestamp(now * 1000);
    }
  }
  const counted = record.logNumber === 1 ? `attribute_not_exists(${count})` : `${count} = :previous`;
  if (record.logNumber > 1) values[':previous'] = record.logNumber - 1;
  return {
    what: 'webhook_endpoint',
    action: {
      Update: {
        TableName: tableName(),
        Key: webhookKeys.endpoint(record.accountId, record.endpointId),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: `attribute_exists(pk) AND ${counted}`,
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => (held ? new LogNumberTaken() : new EndpointNotFound()),
  };
}
