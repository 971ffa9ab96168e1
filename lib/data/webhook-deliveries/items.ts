import { getItem } from '../client.ts';
import { webhookDeliveryKeys as keys } from '../keys.ts';
import { deliveryOf } from './internal.ts';

/** The dispatcher's items and their shapes as read (how they fit together: ../webhook-deliveries.ts). */

/** The newest attempts kept per endpoint (the deliveries log). */
export const ATTEMPTS_KEPT = 10_000;

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

/** A pending delivery as the runner finds it. */
export interface PendingDelivery {
  eventId: string;
  eventType: string;
  dueAt: number;
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
