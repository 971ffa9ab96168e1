import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { intEnv } from '#lib/config/env.ts';
import { isLocalStage } from '#lib/config/stage.ts';
import { getEventBody } from '#lib/data/events.ts';
import {
  type AttemptRecord,
  attemptCountOf,
  ClaimLost,
  claimDelivery,
  type Delivery,
  type EndpointOutcome,
  failPending,
  type LeasedEndpoint,
  LogNumberTaken,
  type PendingDelivery,
  recordAttempt,
} from '#lib/data/webhook-deliveries.ts';
import { EndpointNotFound, getEndpoint } from '#lib/data/webhooks.ts';
import { deliveryHeaders } from './sign.ts';
import {
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  DEFAULT_RETRY_SCHEDULE_SECONDS,
  DISABLE_AFTER_MS,
  type Endpoint,
} from './types.ts';
import { resolveWebhookTarget, type WebhookTarget } from './url-policy.ts';

/**
 * One delivery attempt (docs/webhooks.md, "States"): claim the delivery, read the event's JSON as stored,
 * check the endpoint's URL again and connect only to the address that check allowed, POST with the Standard
 * Webhooks headers within the attempt limit, and record the outcome (the attempt, the delivery's next state, its
 * pending item moved, the endpoint's marks) in one transaction.
 */

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

/** At most this much of an answer is read; the rest is dropped with the connection. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** A Retry-After is honoured up to this far ahead (a delivery's items are kept 30 days). */
const MAX_RETRY_AFTER_MS = 7 * 24 * 60 * 60 * 1000;

export const DISABLED_REASONS = {
  gone: 'The endpoint answered 410 Gone.',
  failing: 'No delivery to the endpoint succeeded for 5 days.',
} as const;

/** What the receiver answered, or why there was no answer. */
export interface Answer {
  status: number | null;
  /** `timeout`, `connection_refused`, `connection_failed: <code>`, `url_refused: <why>`; null with a status. */
  error: string | null;
  /** A 429/503's Retry-After, in ms from now. */
  retryAfterMs: number | null;
  durationMs: number;
}

/**
 * POSTs `body` to the target, connecting only to its checked address (the name is kept for the Host header and
 * TLS's SNI and certificate check); no redirect is followed. Answers within `timeoutMs` whatever the receiver
 * does: a slow connection, a slow or endless answer is cut there; at most MAX_ANSWER_BYTES of the answer are read.
 */
export function postWebhook(
  target: WebhookTarget,
  body: Buffer,
  headers: Record<string, string>,
  timeoutMs: number,
): Promise<Answer> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const pinned: LookupFunction = (_host, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };
  return new Promise<Answer>((resolve) => {
    let settled = false;
    let status: number | null = null;
    let retryAfterMs: number | null = null;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve({ status, error: status === null ? error : null, retryAfterMs, durationMs: elapsed() });
    };
    const client = target.url.protocol === 'https:' ? https : http;
    const request = client.request(target.url, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(body.length) },
      lookup: pinned,
      agent: false,
    });
    const timer = setTimeout(() => finish('timeout'), timeoutMs);
    request.on('response', (response) => {
      status = response.statusCode ?? null;
      retryAfterMs = retryAfterOf(response.headers['retry-after']);
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= MAX_ANSWER_BYTES) finish(null);
      });
      response.on('end', () => finish(null));
      response.on('error', () => finish(null));
      response.on('close', () => finish(null));
    });
    request.on('error', (error: NodeJS.ErrnoException) => finish(connectionError(error)));
    request.end(body);
  });
}

function connectionError(error: NodeJS.ErrnoException): string {
  if (error.code === 'ECONNREFUSED') return 'connection_refused';
  return `connection_failed: ${error.code ?? error.message}`;
}

/** Retry-After in ms from now: delta seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterOf(value: string | string[] | undefined, now = Date.now()): number | null {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || raw.trim() === '') return null;
  const ms = /^\s*\d+\s*$/.test(raw) ? Number(raw) * 1000 : Date.parse(raw) - now;
  return Number.isFinite(ms) ? Math.min(Math.max(0, ms), MAX_RETRY_AFTER_MS) : null;
}

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

/**
 * An endpoint held by a runner's lease: its latest known state, and its attempts log, whose numbers are taken one
 * record at a time (records of one endpoint are chained; a number taken meanwhile by another writer is read again).
 */
export class HeldEndpoint {
  endpoint: Endpoint;
  private attemptCount: number;
  private records: Promise<unknown> = Promise.resolve();

  constructor(
    readonly accountId: string,
    readonly endpointId: string,
    readonly owner: string,
    leased: LeasedEndpoint,
  ) {
    this.endpoint = leased.endpoint;
    this.attemptCount = leased.attemptCount;
  }

  /** The endpoint as a lease renewal read it (a management write may have changed it). */
  refresh(leased: LeasedEndpoint): void {
    this.endpoint = leased.endpoint;
    this.attemptCount = Math.max(this.attemptCount, leased.attemptCount);
  }

  /**
   * The endpoint as read again just before an attempt: its owner may have disabled it, moved it or deleted it since
   * the lease last read it (undefined: deleted; what is still pending of it then ends as for a disabled one).
   */
  reread(endpoint: Endpoint | undefined): void {
    this.endpoint = endpoint ?? { ...this.endpoint, enabled: false };
  }

  /**
   * Records an attempt: false when there was nothing to record it in (the claim lost, or the endpoint deleted).
   * A write the store failed (unreachable, stalled, its answer lost) is made again until `until`, the claim's end:
   * what the receiver answered (a success, a 429's Retry-After) is kept, and the delivery, still claimed meanwhile,
   * is not attempted again early. Past the claim's end it is left pending, attempted again (same webhook-id).
   */
  record(record: HeldRecord, until: number): Promise<boolean> {
    const run = this.records.then(() => this.recordNow(record, until));
    this.records = run.catch(() => {});
    return run;
  }

  private async recordNow(record: HeldRecord, until: number) {
    for (let failures = 0; ; ) {
      try {
        await recordAttempt({
          ...record,
          accountId: this.accountId,
          endpointId: this.endpointId,
          owner: this.owner,
          logNumber: this.attemptCount + 1,
          failingSince: this.endpoint.failingSince,
        });
        this.attemptCount++;
        this.applied(record.endpoint, record.attempt.at);
        return true;
      } catch (error) {
        if (error instanceof ClaimLost || error instanceof EndpointNotFound) return false;
        if (error instanceof LogNumberTaken) {
          const count = await attemptCountOf(this.accountId, this.endpointId);
          if (count === undefined) return false;
          this.attemptCount = count;
          continue;
        }
        // A write that landed although its answer was lost is refused when made again (ClaimLost: the claim ended).
        const backoff = Math.min(1000, 100 * 2 ** failures++);
        if (Date.now() + backoff >= until) throw error;
        await new Promise((resolve) => setTimeout(resolve, backoff));
      }
    }
  }

  private applied(outcome: EndpointOutcome, at: number) {
    const e = this.endpoint;
    if (outcome.kind === 'success') this.endpoint = { ...e, lastSuccessAt: at, failingSince: null };
    else this.endpoint = { ...e, failingSince: e.failingSince ?? at };
    if (outcome.kind === 'disable') {
      this.endpoint = { ...this.endpoint, enabled: false, disabledReason: outcome.reason };
    }
  }
}

/** What an attempt's record says; the holder adds the endpoint, the owner, the log number and the failure clock. */
type HeldRecord = Omit<AttemptRecord, 'logNumber' | 'accountId' | 'endpointId' | 'owner' | 'failingSince'>;

export type AttemptResult = 'succeeded' | 'retrying' | 'failed' | 'skipped';

/**
 * One attempt of a pending delivery of the held endpoint. `skipped`: another runner holds its claim, it is no
 * longer pending, or its endpoint is disabled (then it is failed without an attempt).
 */
export async function deliverOnce(held: HeldEndpoint, pending: PendingDelivery): Promise<AttemptResult> {
  const { accountId, endpointId, owner } = held;
  const timeoutMs = attemptTimeoutMs();
  // The claim outlives the attempt and its record: a runner that dies mid-attempt frees it by then.
  const claimedAt = Date.now();
  const delivery = await claimDelivery(accountId, endpointId, pending, owner, timeoutMs + LEASE_MARGIN_MS);
  if (!delivery) return 'skipped';
  if (!held.endpoint.enabled) {
    await failPending(accountId, endpointId, pending, 'endpoint_disabled');
    return 'skipped';
  }
  const body = await getEventBody(accountId, delivery.eventId);
  if (!body) {
    await failPending(accountId, endpointId, pending, 'event_expired');
    return 'failed';
  }
  // The endpoint as it is now, not as the lease last read it (up to a third of a lease ago): once its owner's
  // PATCH or DELETE is answered, nothing more goes to a disabled or deleted endpoint, nor to its old URL.
  held.reread((await getEndpoint(accountId, endpointId))?.entity);
  if (!held.endpoint.enabled) {
    await failPending(accountId, endpointId, pending, 'endpoint_disabled');
    return 'skipped';
  }
  // The claim lasts the attempt limit and LEASE_MARGIN_MS from its write. When the store took more than half that
  // margin to answer it and the reads since, this attempt and its record could outlast the claim, and another runner
  // claim the delivery and send it while this one still does: nothing is sent now (the delivery stays pending).
  if (Date.now() - claimedAt > LEASE_MARGIN_MS / 2) return 'skipped';
  const at = Date.now();
  const started = performance.now();
  const endpoint = held.endpoint;
  const target = await resolveWebhookTarget(endpoint.url, { allowLocal: isLocalStage() });
  let answer: Answer;
  if ('refused' in target) {
    answer = { status: null, error: `url_refused: ${target.refused}`, retryAfterMs: null, durationMs: 0 };
  } else {
    const headers = deliveryHeaders(delivery.eventId, body, endpoint.secrets, at);
    const left = Math.max(1, timeoutMs - (performance.now() - started));
    answer = await postWebhook(target, body, headers, left);
  }
  const durationMs = Math.round(performance.now() - started);
  const now = Date.now();
  const decision = decide(answer, delivery, endpoint, now, retrySchedule());
  await held.record(
    {
      delivery,
      dueAt: pending.dueAt,
      attempt: { at, status: answer.status, error: answer.error, durationMs },
      next: decision.next,
      endpoint: decision.endpoint,
    },
    claimedAt + timeoutMs + LEASE_MARGIN_MS,
  );
  return decision.next.state === 'pending' ? 'retrying' : decision.next.state;
}
