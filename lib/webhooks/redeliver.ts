import { eventsSince, getEvent } from '#lib/data/events.ts';
import { type EventToDeliver, reopenDeliveries } from '#lib/data/webhook-deliveries.ts';
import { EndpointNotFound, getEndpoint } from '#lib/data/webhooks/webhooks.ts';
import { subscribes } from './subscription.ts';

/** Sending events again to an endpoint: one by id, or every subscribed one since a time. */

/** At most this many events are sent again by one redeliver `{since}` (the oldest first). */
export const MAX_REDELIVER_EVENTS = 1000;

/** redeliver's request: one event by id, or every event since a time (epoch ms) the endpoint subscribes to. */
export type RedeliverRequest = { eventId: string } | { since: number };

export interface RedeliverResult {
  /** The events sent again (their deliveries are pending now), oldest first. */
  eventIds: string[];
  /** `since` only: more events than MAX_REDELIVER_EVENTS qualified; the newest of them were left out. */
  more: boolean;
}

/** redeliver `{eventId}`: no such event of this account is kept (unknown, expired, another account's). */
export class UnknownEvent extends Error {
  constructor() {
    super('No such event');
  }
}

/** redeliver to a disabled endpoint: nothing was written (enable it first). */
export class EndpointDisabled extends Error {
  constructor() {
    super('The webhook endpoint is disabled');
  }
}

/**
 * Sends events again, with their ids (`webhook-id`) unchanged: each one's delivery becomes pending again, due
 * now, its attempts numbered on from the last (a new round of the retry schedule). `{eventId}`: that event,
 * whatever its type (UnknownEvent when not kept). `{since}`: every kept event created at or after it (epoch ms)
 * of a type the endpoint subscribes to, at most MAX_REDELIVER_EVENTS. A delivery still pending, waiting for a
 * retry, is made due now (its attempts and round go on); one being attempted is left to that attempt.
 * EndpointNotFound, EndpointDisabled.
 */
export async function redeliver(
  accountId: string,
  endpointId: string,
  request: RedeliverRequest,
): Promise<RedeliverResult> {
  const stored = await getEndpoint(accountId, endpointId);
  if (!stored) throw new EndpointNotFound();
  const endpoint = stored.entity;
  if (!endpoint.enabled) throw new EndpointDisabled();
  let events: EventToDeliver[];
  let more = false;
  if ('eventId' in request) {
    const event = await getEvent(accountId, request.eventId);
    if (!event) throw new UnknownEvent();
    events = [{ id: event.id, type: event.type }];
  } else {
    const wants = subscribes(endpoint);
    const found = await eventsSince(accountId, request.since, MAX_REDELIVER_EVENTS * 4);
    // An import's changes were never sent (fan-out.ts): a redelivery by time does not send them either.
    const wanted = found.events.filter((e) => !e.imported && wants(e.type));
    events = wanted.slice(0, MAX_REDELIVER_EVENTS);
    more = found.more || wanted.length > MAX_REDELIVER_EVENTS;
  }
  await reopenDeliveries(accountId, endpointId, events);
  return { eventIds: events.map((e) => e.id), more };
}
