import type { EventSummary } from '../events.ts';
import { webhookDeliveryKeys as keys } from '../keys.ts';
import { getItem, tableName } from '../store/client.ts';
import { retryOnConflict } from '../store/errors.ts';
import { table } from '../store/table.ts';
import { type CommitAction, commit } from '../store/transact.ts';
import { putPending, removePending } from './pending.ts';

/**
 * The delivery item, one per (endpoint, event) (how the items fit together: ../webhook-deliveries.ts): its
 * shape, its reads, and its writes as pending (a fan-out's or a redelivery's, with its pending item).
 */

/** Deliveries and pending items are kept this long after their last change (DynamoDB TTL). */
const DELIVERY_RETENTION_SECONDS = 30 * 24 * 60 * 60;

const DELIVERY_TYPE = 'webhook_delivery';

/**
 * The delivery item's attributes beside its keys: their one spelling, in expressions and reads alike. `state`
 * is a reserved word: expressions name it `#state`.
 */
export const DELIVERY_ATTR = {
  eventId: 'eventId',
  eventType: 'eventType',
  state: 'state',
  attempts: 'attempts',
  roundFirst: 'roundFirst',
  nextAt: 'nextAt',
  lastStatus: 'lastStatus',
  lastError: 'lastError',
  lastAttemptAt: 'lastAttemptAt',
  createdAt: 'createdAt',
  updatedAt: 'updatedAt',
  /** The claim of one attempt (claims.ts): its runner, and until when. */
  leaseOwner: 'leaseOwner',
  leaseUntil: 'leaseUntil',
  expiresAt: table.ttlAttribute,
} as const;
const D = DELIVERY_ATTR;
/** `#state` of the expressions. */
export const STATE_NAME = { '#state': D.state };

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

/**
 * A conditional write of a delivery found it other than the write required (not pending at that due, taken by
 * a claim, there already): nothing was written. `held`: the item as it was, when the write asked for it.
 */
export class DeliveryRefused extends Error {
  constructor(readonly held?: Record<string, unknown>) {
    super('The delivery is not as the write required');
  }
}

/** A commit's conditional update of a delivery (its `#state` named), refused as DeliveryRefused. */
export function updateDelivery(
  key: ReturnType<typeof keys.delivery>,
  update: { set: string; condition: string; values: Record<string, unknown> },
): CommitAction {
  return {
    what: 'webhook_delivery',
    action: {
      Update: {
        TableName: tableName(),
        Key: key,
        UpdateExpression: update.set,
        ConditionExpression: update.condition,
        ExpressionAttributeNames: STATE_NAME,
        ExpressionAttributeValues: update.values,
      },
    },
    refused: () => new DeliveryRefused(),
  };
}

export function deliveryOf(item: Record<string, unknown>): Delivery {
  return {
    eventId: String(item[D.eventId]),
    eventType: String(item[D.eventType]),
    state: item[D.state] as DeliveryState,
    attempts: Number(item[D.attempts] ?? 0),
    roundFirst: Number(item[D.roundFirst] ?? 1),
    nextAt: item[D.nextAt] == null ? null : Number(item[D.nextAt]),
    lastStatus: item[D.lastStatus] == null ? null : Number(item[D.lastStatus]),
    lastError: item[D.lastError] == null ? null : String(item[D.lastError]),
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
  const expiresAt = retentionFrom(now);
  const pending = putPending(
    'webhook_pending',
    accountId,
    endpointId,
    now,
    { eventId: event.id, eventType: event.type },
    expiresAt,
  );
  const create: CommitAction = {
    what: 'webhook_delivery',
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...keys.delivery(accountId, endpointId, event.id),
          type: DELIVERY_TYPE,
          [D.eventId]: event.id,
          [D.eventType]: event.type,
          [D.state]: 'pending',
          [D.attempts]: 0,
          [D.roundFirst]: 1,
          [D.nextAt]: now,
          [D.lastStatus]: null,
          [D.lastError]: null,
          [D.createdAt]: now,
          [D.updatedAt]: now,
          [D.expiresAt]: expiresAt,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => new DeliveryRefused(held),
  };
  try {
    await retryOnConflict(() => commit([create, pending]));
    return true;
  } catch (error) {
    if (!(error instanceof DeliveryRefused)) throw error;
    const held = error.held;
    if (mode === 'new' || !held) return false;
    if (held[D.state] === 'pending') return bringForward(accountId, endpointId, deliveryOf(held), now);
  }
  const reopen = updateDelivery(keys.delivery(accountId, endpointId, event.id), {
    set:
      `SET #state = :pending, ${D.roundFirst} = ${D.attempts} + :one, ${D.nextAt} = :now, ` +
      `${D.updatedAt} = :now, ${D.expiresAt} = :expires`,
    condition: 'attribute_exists(pk) AND #state <> :pending',
    values: { ':pending': 'pending', ':one': 1, ':now': now, ':expires': expiresAt },
  });
  try {
    await retryOnConflict(() => commit([reopen, pending]));
    return true;
  } catch (error) {
    // Pending again already (a concurrent redeliver), or gone: nothing to add.
    if (error instanceof DeliveryRefused) return false;
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
      commit([
        updateDelivery(keys.delivery(accountId, endpointId, delivery.eventId), {
          set: `SET ${D.nextAt} = :now, ${D.updatedAt} = :now`,
          condition:
            `#state = :pending AND ${D.nextAt} = :due AND ` +
            `(attribute_not_exists(${D.leaseUntil}) OR ${D.leaseUntil} < :now)`,
          values: { ':now': now, ':pending': 'pending', ':due': due },
        }),
        removePending(accountId, endpointId, due, delivery.eventId),
        putPending('webhook_pending_next', accountId, endpointId, now, delivery, retentionFrom(now)),
      ]),
    );
    return true;
  } catch (error) {
    if (error instanceof DeliveryRefused) return false;
    throw error;
  }
}
