/** The pending item, one per pending delivery, sorted by due time (../webhook-deliveries.ts). */

export const PENDING_TYPE = 'webhook_pending';

/** A pending delivery as the runner finds it. */
export interface PendingDelivery {
  eventId: string;
  eventType: string;
  dueAt: number;
}
