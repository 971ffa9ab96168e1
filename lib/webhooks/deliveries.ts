import { type DeliveryAttempt, listDeliveryAttempts } from '#lib/data/webhook-deliveries.ts';
import { isEndpointId } from '#lib/data/webhooks/endpoint-ids.ts';
import { EndpointNotFound } from '#lib/data/webhooks/webhooks.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { DEFAULT_PER_PAGE, linkParamsOf, recognisedBy } from '#lib/list-params.ts';
import { type ListUrl, type PageRequest, paginate } from '#lib/pagination.ts';
import { formatTimestamp } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { EndpointDisabled, MAX_REDELIVER_EVENTS, redeliver, UnknownEvent } from './redeliver.ts';
import { DeliveryListQueryParams, RedeliverSchema } from './schemas.ts';

/**
 * An endpoint's deliveries log and redeliveries (decisions.md, "Webhooks"); the deliveries themselves are the
 * dispatcher's (lib/data/webhook-deliveries.ts). An endpoint is found only within its account (404 otherwise).
 */

const msTimestamp = (ms: number) => formatTimestamp(ms * 1000);

/** One attempt as the deliveries log shows it. */
export function presentAttempt(a: DeliveryAttempt) {
  return {
    event_id: a.eventId,
    event_type: a.eventType,
    attempt: a.attempt,
    status: a.status,
    error: a.error,
    duration_ms: a.durationMs,
    attempted_at: msTimestamp(a.at),
    next_attempt_at: a.nextAttemptAt === null ? null : msTimestamp(a.nextAttemptAt),
  };
}

export function parseDeliveryListQuery(query: Record<string, string[]>): PageRequest {
  const q = parseInput(DeliveryListQueryParams, query);
  return {
    page: q.page ?? 1,
    perPage: q.per_page ?? DEFAULT_PER_PAGE,
    linkParams: linkParamsOf(query, recognisedBy(DeliveryListQueryParams)),
  };
}

/** The `listWebhookDeliveries` route: the attempts, newest first, paginated as tickets. */
export async function listWebhookDeliveries(accountId: string, ref: string, query: PageRequest, at: ListUrl) {
  if (!isEndpointId(ref)) throw new NotFound();
  try {
    const { data, total } = await listDeliveryAttempts(accountId, ref, query);
    return paginate(data.map(presentAttempt), total, query, at);
  } catch (error) {
    if (error instanceof EndpointNotFound) throw new NotFound();
    throw error;
  }
}

/** How many events a redelivery sent again, and what its answer says of them. */
export interface Redelivery {
  count: number;
  message: string;
}

function redeliveryMessage(count: number, more: boolean): string {
  if (count === 0) return 'No events to send again.';
  const queued = `${count} event${count === 1 ? '' : 's'} will be sent again.`;
  return more
    ? `${queued} Only the oldest ${MAX_REDELIVER_EVENTS} were taken: redeliver again with a later since for the rest.`
    : queued;
}

/**
 * The `redeliverWebhook` route: `{"event_id"}` (an event of the account, kept 30 days) or `{"since"}`
 * (every event since then of a type the endpoint receives), sent again with their webhook-ids unchanged.
 */
export async function redeliverWebhookEvents(
  accountId: string,
  ref: string,
  body: unknown,
): Promise<Redelivery> {
  const input = parseInput(RedeliverSchema, body);
  if (!isEndpointId(ref)) throw new NotFound();
  const request =
    input.event_id !== undefined ? { eventId: input.event_id } : { since: Date.parse(input.since ?? '') };
  try {
    const { eventIds, more } = await redeliver(accountId, ref, request);
    return { count: eventIds.length, message: redeliveryMessage(eventIds.length, more) };
  } catch (error) {
    if (error instanceof EndpointNotFound) throw new NotFound();
    if (error instanceof UnknownEvent) {
      throw ValidationFailed.field('event_id', 'The selected event id is invalid.');
    }
    if (error instanceof EndpointDisabled) {
      throw ValidationFailed.field('body', 'The webhook endpoint is disabled: enable it to redeliver.');
    }
    throw error;
  }
}
