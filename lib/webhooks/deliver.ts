import { intEnv } from '#lib/config/env.ts';
import { isLocalStage } from '#lib/config/stage.ts';
import { getEventBody } from '#lib/data/events.ts';
import {
  type AttemptRecord,
  claimDelivery,
  type Delivery,
  type EndpointOutcome,
  failPending,
  LOG_LANES,
  type PendingDelivery,
} from '#lib/data/webhook-deliveries.ts';
import { nowMicros, nowMillis } from '#lib/time.ts';
import type { HeldEndpoint } from './held-endpoint.ts';
import { type Answer, postWebhook } from './post.ts';
import { deliveryHeaders } from './sign.ts';
import {
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_RETRY_SCHEDULE_SECONDS,
  DISABLE_AFTER_MS,
  type Endpoint,
} from './types.ts';
import { resolveWebhookTarget } from './url-policy.ts';

/**
 * One delivery attempt (docs/webhooks.md, "States"): claim the delivery, read the event's JSON as stored,
 * check the endpoint's URL again and connect only to the address that check allowed, POST with the Standard
 * Webhooks headers within the attempt limit, and record the outcome (the attempt, the delivery's next state, its
 * pending item moved, the endpoint's marks) in one transaction.
 */

export * from './held-endpoint.ts';
export * from './post.ts';

/** Each attempt's limit, connection, request and answer included (WEBHOOK_TIMEOUT_MS; read at each use). */
export const attemptTimeoutMs = () => intEnv('WEBHOOK_TIMEOUT_MS', DEFAULT_ATTEMPT_TIMEOUT_MS);

/** The retry schedule in seconds (WEBHOOK_RETRY_SCHEDULE, comma-separated; read at each use). */
export function retrySchedule(): number[] {
  const raw = process.env.WEBHOOK_RETRY_SCHEDULE;
  if (raw === undefined || raw.trim() === '') return DEFAULT_RETRY_SCHEDULE_SECONDS;
  const steps = raw.split(',').map((s) => Number(s.trim()));
  if (steps.some((s) => !Number.isFinite(s) || s < 0)) {
    throw new Error(`WEBHOOK_RETRY_SCHEDULE must be seconds, comma-separated (e.g. 1,2,4), got "${raw}"`);
  }
  return steps;
}

/**
 * What a claim (and an endpoint's lease) lasts beyond the attempt limit: the attempt's record, with room for a slow
 * store. A runner that dies leaves its deliveries due again after this; a record that lands after it finds the
 * claim taken (ClaimLost) and the receiver may get that attempt twice, with the same webhook-id.
 */
export const LEASE_MARGIN_MS = 10_000;

export const DISABLED_REASONS = {
  gone: 'The endpoint answered 410 Gone.',
  failing: 'No delivery to the endpoint succeeded for 5 days.',
} as const;

/** What an answer makes of the delivery and the endpoint. */
export interface Decision {
  next: AttemptRecord['next'];
  endpoint: EndpointOutcome;
}

/**
 * The outcome of attempt `delivery.attempts + 1` (decisions.md, "Webhooks"): 2xx succeeded; 410 failed and the
 * endpoint disabled; otherwise the schedule's next step after this attempt (counted from the round's first: a
 * redelivery starts the schedule again), no sooner than a 429/503's Retry-After, or failed after the last; and the
 * endpoint disabled once it has failed, with no success, for DISABLE_AFTER_MS.
 */
export function decide(
  answer: Answer,
  delivery: Pick<Delivery, 'attempts' | 'roundFirst'>,
  endpoint: Pick<Endpoint, 'failingSince'>,
  now: number,
  schedule: readonly number[],
): Decision {
  const { status } = answer;
  if (status !== null && status >= 200 && status < 300) {
    return { next: { state: 'succeeded' }, endpoint: { kind: 'success' } };
  }
  if (status === 410) {
    return { next: { state: 'failed' }, endpoint: { kind: 'disable', reason: DISABLED_REASONS.gone } };
  }
  const failingSince = endpoint.failingSince ?? now;
  const failure: EndpointOutcome =
    now - failingSince >= DISABLE_AFTER_MS
      ? { kind: 'disable', reason: DISABLED_REASONS.failing }
      : { kind: 'failure' };
  const step = schedule[delivery.attempts + 1 - delivery.roundFirst];
  if (step === undefined || failure.kind === 'disable')
    return { next: { state: 'failed' }, endpoint: failure };
  let nextAt = now + step * 1000;
  if ((status === 429 || status === 503) && answer.retryAfterMs !== null) {
    nextAt = Math.max(nextAt, now + answer.retryAfterMs);
  }
  return { next: { state: 'pending', nextAt }, endpoint: failure };
}

export type AttemptResult = 'succeeded' | 'retrying' | 'failed' | 'skipped';

/**
 * One attempt of a pending delivery of the held endpoint. `skipped`: another runner holds its claim, it is no
 * longer pending, or its endpoint is disabled (then it is failed without an attempt).
 */
export async function deliverOnce(
  held: HeldEndpoint,
  pending: PendingDelivery,
  /** The log's count lane it is recorded on: the runner's slot of the endpoint it runs in (one attempt at a time). */
  lane = 0,
  /** Told what the receiver answered (or why not), once it has, before the record: the runner's window. */
  onAnswer?: (answer: Answer) => void,
): Promise<AttemptResult> {
  if (!(lane >= 0 && lane < LOG_LANES))
    throw new RangeError(`lane ${lane} is not one of the log's ${LOG_LANES}`);
  const { accountId, endpointId, owner } = held;
  const timeoutMs = attemptTimeoutMs();
  // The claim outlives the attempt and its record: a runner that dies mid-attempt frees it by then.
  const claimedAt = nowMillis();
  const delivery = await claimDelivery(accountId, endpointId, pending, owner, timeoutMs + LEASE_MARGIN_MS);
  if (!delivery) return 'skipped';
  if (!held.endpoint.enabled) {
    await failPending(accountId, endpointId, pending, 'endpoint_disabled');
    return 'skipped';
  }
  // The endpoint as it is now, not as the lease last read it (up to a third of a lease ago): once its owner's
  // PATCH or DELETE is answered, nothing more goes to a disabled or deleted endpoint, nor to its old URL. Read
  // beside the event's body (one round trip for both).
  const [body] = await Promise.all([getEventBody(accountId, delivery.eventId), held.reread()]);
  if (!body) {
    await failPending(accountId, endpointId, pending, 'event_expired');
    return 'failed';
  }
  if (!held.endpoint.enabled) {
    await failPending(accountId, endpointId, pending, 'endpoint_disabled');
    return 'skipped';
  }
  // The claim lasts the attempt limit and LEASE_MARGIN_MS from its write. When the store took more than half that
  // margin to answer it and the reads since, this attempt and its record could outlast the claim, and another runner
  // claim the delivery and send it while this one still does: nothing is sent now (the delivery stays pending).
  if (nowMillis() - claimedAt > LEASE_MARGIN_MS / 2) return 'skipped';
  const at = nowMillis();
  const started = nowMicros();
  const endpoint = held.endpoint;
  const target = await resolveWebhookTarget(endpoint.url, { allowLocal: isLocalStage() });
  let answer: Answer;
  if ('refused' in target) {
    answer = { status: null, error: `url_refused: ${target.refused}`, retryAfterMs: null, durationMs: 0 };
  } else {
    const headers = deliveryHeaders(delivery.eventId, body, endpoint.secrets, at);
    const left = Math.max(1, timeoutMs - (nowMicros() - started) / 1000);
    answer = await postWebhook(target, body, headers, left);
  }
  onAnswer?.(answer);
  const durationMs = Math.round((nowMicros() - started) / 1000);
  const now = nowMillis();
  const decision = decide(answer, delivery, endpoint, now, retrySchedule());
  await held.record(
    {
      delivery,
      dueAt: pending.dueAt,
      attempt: { at, status: answer.status, error: answer.error, durationMs },
      next: decision.next,
      lane,
    },
    decision.endpoint,
    claimedAt + timeoutMs + LEASE_MARGIN_MS,
  );
  // The slow lane, on the endpoint item for every runner (due.ts), after the record: its write failing loses no record.
  await held.answered(answer);
  return decision.next.state === 'pending' ? 'retrying' : decision.next.state;
}
