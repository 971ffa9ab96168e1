import { getItem, tableName } from '../client.ts';
import { isConditionFailure, itemOnConditionFailure, retryOnConflict } from '../errors.ts';
import type { EventSummary } from '../events.ts';
import { webhookDeliveryKeys as keys } from '../keys.ts';
import { type TransactAction, transact } from '../transact.ts';
import { PENDING_TYPE } from './pending.ts';

/**
 * The delivery item, one per (endpoint, event) (how the items fit together: ../webhook-deliveries.ts): its
 * shape, its reads, and its writes as pending (a fan-out's or a redelivery's, with its pending item).
 */

/** Deliveries and pending items are kept this long after their last change (DynamoDB TTL). */
const DELIVERY_RETENTION_SECONDS = 30 * 24 * 60 * 60;

const DELIVERY_TYPE = 'webhook_delivery';

export type DeliveryState = 'pending' | 'succeeded' | 'failed';

/** A delivery of one event to one endpoint. */
export interface Delivery {
  eventId: string;
  eventType: string;
  state: DeliveryState;
  /** Attempts made so far (over every round). */
  attempts: number;
  /** The number of this round's first attempt: 1, or the attempt a redelivery starts (its schedule restarts). */
  roundFirst: number;
  /** Epoch ms of the next attempt while pending; null once ended. */
  nextAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
}

/** One delivery by event id, or undefined (the deliveries of a test, or of a support question). */
export async function getDelivery(
  accountId: string,
  endpointId: string,
  eventId: string,
): Promise<Delivery | undefined> {
  const item = await getItem(keys.delivery(accountId, endpointId, eventId));
  return item ? deliveryOf(item) : undefined;
}

export function deliveryOf(item: Record<string, unknown>): Delivery {
  return {
    eventId: String(item.eventId),
    eventType: String(item.eventType),
    state: item.state as DeliveryState,
    attempts: Number(item.attempts ?? 0),
    roundFirst: Number(item.roundFirst ?? 1),
    nextAt: item.nextAt == null ? null : Number(item.nextAt),
    lastStatus: item.lastStatus == null ? null : Number(item.lastStatus),
    lastError: item.lastError == null ? null : String(item.lastError),
  };
}

export const retentionFrom = (ms: number) => Math.floor(ms / 1000) + DELIVERY_RETENTION_SECONDS;

/**
 * One delivery made pending (due `now`) with its pending item, in one transaction. `new`: only where none exists.
 * `again`: a delivery that ended is reopened for a new round (its attempts go on); one that does not exist is
 * created; one still pending is made due now (bringForward). Answers whether it wrote.
 */
export async function queueDelivery(
  accountId: string,
  endpointId: string,
  event: Pick<EventSummary, 'id' | 'type'>,
  now: number,
  mode: 'new' | 'again',
): Promise<boolean> {
  const expires_at = retentionFrom(now);
  const pending: TransactAction = {
    Put: {
      TableName: tableName(),
      Item: {
        ...keys.pending(accountId, endpointId, now, event.id),
        type: PENDING_TYPE,
        eventId: event.id,
        eventType: event.type,
        expires_at,
      },
    },
  };
  const create: TransactAction = {
    Put: {
      TableName: tableName(),
      Item: {
        ...keys.delivery(accountId, endpointId, event.id),
        type: DELIVERY_TYPE,
        eventId: event.id,
        eventType: event.type,
        state: 'pending',
        attempts: 0,
        roundFirst: 1,
        nextAt: now,
        lastStatus: null,
        lastError: null,
        createdAt: now,
        updatedAt: now,
        expires_at,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    },
  };
  try {
    await retryOnConflict(() => transact([create, pending]));
    return true;
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const held = itemOnConditionFailure(error, 0);
    if (mode === 'new' || !held) return false;
    if (held.state === 'pending') return bringForward(accountId, endpointId, deliveryOf(held), now);
  }
  const reopen: TransactAction = {
    Update: {
      TableName: tableName(),
      Key: keys.delivery(accountId, endpointId, event.id),
      UpdateExpression:
        'SET #state = :pending, roundFirst = attempts + :one, nextAt = :now, updatedAt = :now, expires_at = :expires',
      ConditionExpression: 'attribute_exists(pk) AND #state <> :pending',
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ':pending': 'pending', ':one': 1, ':now': now, ':expires': expires_at },
    },
  };
  try {
    await retryOnConflict(() => transact([reopen, pending]));
    return true;
  } catch (error) {
    // Pending again already (a concurrent redeliver), or gone: nothing to add.
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * A pending delivery due later (waiting for its next retry) made due now: its pending item moved, unless an
 * attempt holds it (that attempt's record decides what follows). Answers whether it moved.
 */
export async function bringForward(accountId: string, endpointId: string, delivery: Delivery, now: number) {
  const due = delivery.nextAt;
  if (due === null || due <= now) return false;
  try {
    await retryOnConflict(() =>
      transact([
        {
          Update: {
            TableName: tableName(),
            Key: keys.delivery(accountId, endpointId, delivery.eventId),
            UpdateExpression: 'SET nextAt = :now, updatedAt = :now',
            ConditionExpression:
              '#state = :pending AND nextAt = :due AND (attribute_not_exists(leaseUntil) OR leaseUntil < :now)',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: { ':now': now, ':pending': 'pending', ':due': due },
          },
        },
        {
          Delete: {
            TableName: tableName(),
            Key: keys.pending(accountId, endpointId, due, delivery.eventId),
          },
        },
        {
          Put: {
            TableName: tableName(),
            Item: {
              ...keys.pending(accountId, endpointId, now, delivery.eventId),
              type: PENDING_TYPE,
              eventId: delivery.eventId,
              eventType: delivery.eventType,
              expires_at: retentionFrom(now),
            },
          },
        },
      ]),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
