import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { webhookDeliveryKeys as keys } from '../keys.ts';
import { dynamo, queryAll, tableName } from '../store/client.ts';
import { isConditionFailure, itemOnConditionFailure, retryOnConflict } from '../store/errors.ts';
import { commit } from '../store/transact.ts';
import {
  DELIVERY_ATTR as D,
  type Delivery,
  DeliveryRefused,
  deliveryOf,
  STATE_NAME,
  updateDelivery,
} from './delivery.ts';
import { type PendingDelivery, pendingOf, removePending } from './pending.ts';

/** A leased endpoint's due deliveries: read, claimed one at a time, or ended without an attempt. */

/** The endpoint's deliveries due at or before `now`, earliest first, at most `limit`. */
export async function duePending(
  accountId: string,
  endpointId: string,
  now: number,
  limit: number,
): Promise<PendingDelivery[]> {
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk AND sk < :before',
      ExpressionAttributeValues: {
        ':pk': keys.pendingPartition(accountId, endpointId),
        ':before': keys.pendingDueBefore(now),
      },
      ConsistentRead: true,
    },
    limit,
  );
  return items.map(pendingOf);
}

/**
 * Claims a pending delivery for one attempt by `owner` until now + leaseMs: no other runner attempts it meanwhile,
 * and only the claim's holder records the outcome. Answers the delivery, or undefined: claimed by another runner
 * still, or no longer pending at this due (its pending item is stale and is deleted). A live claim of `owner`'s own
 * is taken again: an attempt of it that ended without a record (the claim's answer lost, nothing sent), as a runner
 * attempts each delivery once at a time (lib/webhooks/due.ts).
 */
export async function claimDelivery(
  accountId: string,
  endpointId: string,
  pending: PendingDelivery,
  owner: string,
  leaseMs: number,
): Promise<Delivery | undefined> {
  const now = nowMillis();
  try {
    const { Attributes } = await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.delivery(accountId, endpointId, pending.eventId),
          UpdateExpression: `SET ${D.leaseOwner} = :owner, ${D.leaseUntil} = :until`,
          ConditionExpression:
            `#state = :pending AND ${D.nextAt} = :due AND ` +
            `(attribute_not_exists(${D.leaseUntil}) OR ${D.leaseUntil} < :now OR ${D.leaseOwner} = :owner)`,
          ExpressionAttributeNames: STATE_NAME,
          ExpressionAttributeValues: {
            ':owner': owner,
            ':until': now + leaseMs,
            ':pending': 'pending',
            ':due': pending.dueAt,
            ':now': now,
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    return Attributes ? deliveryOf(Attributes) : undefined;
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    const held = itemOnConditionFailure(error);
    const live = held?.[D.state] === 'pending' && held[D.nextAt] === pending.dueAt;
    if (!live) {
      await dynamo.send(
        new DeleteCommand({
          TableName: tableName(),
          Key: keys.pending(accountId, endpointId, pending.dueAt, pending.eventId),
        }),
      );
    }
    return undefined;
  }
}

/**
 * Ends a pending delivery without an attempt (its endpoint is disabled, or deleted, or its event expired): failed,
 * with `reason` as its last error; its pending item goes. No-op when it is no longer pending at this due.
 */
export async function failPending(
  accountId: string,
  endpointId: string,
  pending: PendingDelivery,
  reason: string,
): Promise<void> {
  const now = nowMillis();
  try {
    await retryOnConflict(() =>
      commit([
        updateDelivery(keys.delivery(accountId, endpointId, pending.eventId), {
          set:
            `SET #state = :failed, ${D.nextAt} = :null, ${D.lastError} = :reason, ${D.updatedAt} = :now ` +
            `REMOVE ${D.leaseOwner}, ${D.leaseUntil}`,
          condition: `#state = :pending AND ${D.nextAt} = :due`,
          values: {
            ':failed': 'failed',
            ':null': null,
            ':reason': reason,
            ':now': now,
            ':pending': 'pending',
            ':due': pending.dueAt,
          },
        }),
        removePending(accountId, endpointId, pending.dueAt, pending.eventId),
      ]),
    );
  } catch (error) {
    if (!(error instanceof DeliveryRefused)) throw error;
    // Not pending at this due any more: only the stale pending item may be left.
    await dynamo.send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.pending(accountId, endpointId, pending.dueAt, pending.eventId),
      }),
    );
  }
}
