import { webhookDeliveryKeys as keys } from '../keys.ts';
import { tableName } from '../store/client.ts';
import { table } from '../store/table.ts';
import type { CommitAction } from '../store/transact.ts';

/** The pending item, one per pending delivery, sorted by due time (../webhook-deliveries.ts). */

export const PENDING_TYPE = 'webhook_pending';

/** The pending item's attributes beside its keys: their one spelling. */
export const PENDING_ATTR = {
  eventId: 'eventId',
  eventType: 'eventType',
  expiresAt: table.ttlAttribute,
} as const;

/** A pending delivery as the runner finds it. */
export interface PendingDelivery {
  eventId: string;
  eventType: string;
  dueAt: number;
}

/** The pending item of a delivery due at `dueAt`, kept until `expiresAt` (epoch seconds). */
export function pendingItem(
  accountId: string,
  endpointId: string,
  dueAt: number,
  event: { eventId: string; eventType: string },
  expiresAt: number,
): Record<string, unknown> {
  return {
    ...keys.pending(accountId, endpointId, dueAt, event.eventId),
    type: PENDING_TYPE,
    [PENDING_ATTR.eventId]: event.eventId,
    [PENDING_ATTR.eventType]: event.eventType,
    [PENDING_ATTR.expiresAt]: expiresAt,
  };
}

/** A pending item read back (its due and event id are in its sort key). */
export function pendingOf(item: Record<string, unknown>): PendingDelivery {
  return { ...keys.parsePending(String(item.sk)), eventType: String(item[PENDING_ATTR.eventType]) };
}

/** A commit's put of a pending item (`what`: how the commit names it: the first, or the next after an attempt). */
export function putPending(
  what: 'webhook_pending' | 'webhook_pending_next',
  ...item: Parameters<typeof pendingItem>
): CommitAction {
  return { what, action: { Put: { TableName: tableName(), Item: pendingItem(...item) } } };
}

/** A commit's delete of the pending item a delivery was due by at `dueAt`. */
export function removePending(
  accountId: string,
  endpointId: string,
  dueAt: number,
  eventId: string,
): CommitAction {
  return {
    what: 'webhook_pending',
    action: { Delete: { TableName: tableName(), Key: keys.pending(accountId, endpointId, dueAt, eventId) } },
  };
}
