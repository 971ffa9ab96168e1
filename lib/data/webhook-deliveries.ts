import { DeleteCommand, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { PageRequest } from '#lib/pagination.ts';
import { formatTimestamp } from '#lib/time.ts';
import { subscribes } from '#lib/webhooks/subscription.ts';
import type { Endpoint } from '#lib/webhooks/types.ts';
import { dynamo, getItem, queryAll, tableName } from './client.ts';
import {
  isConditionFailure,
  isTransactionConflict,
  itemOnConditionFailure,
  retryOnConflict,
} from './errors.ts';
import { type EventSummary, eventsSince, getEventBody } from './events.ts';
import { webhookDeliveryKeys as keys, webhookKeys } from './keys.ts';
import { type CommitAction, commit, type TransactAction, transact } from './transact.ts';
import { EndpointNotFound, endpointOf } from './webhooks.ts';

/**
 * The webhook dispatcher's items (docs/webhooks.md, "Items", "States", "At least once").
 *
 * - A **delivery** per (endpoint, event): `pending` until an attempt's outcome ends it (`succeeded`, `failed`).
 *   Created once (a conditional put: a stream record fanned out again creates nothing).
 * - A **pending** item per pending delivery, sorted by due time: what an endpoint has due now is one Query. An
 *   attempt's record moves it (or deletes it) in the attempt's own transaction.
 * - An **attempt** item per attempt, numbered by the endpoint's `attemptCount` in recording order: newest first is a
 *   descending Query, page n one range of numbers, and the total is the count (exact). The newest
 *   ATTEMPTS_KEPT are kept: recording attempt n deletes attempt n - ATTEMPTS_KEPT in the same transaction.
 * - The endpoint item carries the dispatcher's fields: the **due entry** (gsi1: `WEBHOOK_DUE`,
 *   `<earliest due>#<acc>#<id>`) while it has pending deliveries, `dueVersion` (bumped by every writer of pending
 *   deliveries other than the lease holder, after its pending items landed), the **lease** (`leaseOwner`,
 *   `leaseUntil`: one runner works an endpoint at a time; while leased, the due entry says when the lease ends, so
 *   a dead runner's endpoint comes due again), and `attemptCount`.
 *
 * Why the due entry is never lost: a writer of pending items (fan-out, redeliver) writes them first, then bumps
 * `dueVersion` and lowers the due entry to its due when that is earlier and the endpoint is not leased. The lease
 * holder, on release, reads `dueVersion`, then the earliest pending item, and writes the due entry on the condition
 * that `dueVersion` is unchanged: a pending item it did not see was bumped for after its read, so it reads again.
 */

/** The newest attempts kept per endpoint (the deliveries log). */
export const ATTEMPTS_KEPT = 10_000;
/** Deliveries and pending items are kept this long after their last change (DynamoDB TTL). */
const DELIVERY_RETENTION_SECONDS = 30 * 24 * 60 * 60;
/** At most this many events are sent again by one redeliver `{since}` (the oldest first). */
export const MAX_REDELIVER_EVENTS = 1000;
/** Pending items written at once by one fan-out or redeliver. */
const WRITE_CONCURRENCY = 16;

const DELIVERY_TYPE = 'webhook_delivery';
const PENDING_TYPE = 'webhook_pending';
const ATTEMPT_TYPE = 'webhook_attempt';

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

export interface AttemptPage {
  data: DeliveryAttempt[];
  /** Every attempt of the log (the newest ATTEMPTS_KEPT): exact. */
  total: number;
}

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
 * The deliveries log of an endpoint (GET /api/webhooks/{id}/deliveries): attempts newest first, `page` of
 * `perPage`, and the exact total. Two reads: the endpoint's attempt count, then one range of the log.
 * EndpointNotFound when the endpoint is not there.
 */
export async function listDeliveryAttempts(
  accountId: string,
  endpointId: string,
  page: Pick<PageRequest, 'page' | 'perPage'>,
): Promise<AttemptPage> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: tableName(),
      Key: webhookKeys.endpoint(accountId, endpointId),
      ProjectionExpression: 'pk, attemptCount',
      ConsistentRead: true,
    }),
  );
  if (!Item) throw new EndpointNotFound();
  const count = Number(Item.attemptCount ?? 0);
  const oldestKept = Math.max(1, count - ATTEMPTS_KEPT + 1);
  const total = count - oldestKept + 1;
  const newest = count - (page.page - 1) * page.perPage;
  const oldest = Math.max(oldestKept, newest - page.perPage + 1);
  if (newest < oldestKept) return { data: [], total: Math.max(0, total) };
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :oldest AND :newest',
    ExpressionAttributeValues: {
      ':pk': keys.attemptsPartition(accountId, endpointId),
      ':oldest': keys.attemptSort(oldest),
      ':newest': keys.attemptSort(newest),
    },
    ScanIndexForward: false,
    ConsistentRead: true,
  });
  return { data: items.map(attemptOf), total };
}

/**
 * POST /api/webhooks/{id}/redeliver: sends events again, with their ids (`webhook-id`) unchanged: each one's
 * delivery becomes pending again, due now, its attempts numbered on from the last (a new round of the retry
 * schedule). `{eventId}`: that event, whatever its type (UnknownEvent when not kept). `{since}`: every kept event
 * created at or after it (epoch ms) of a type the endpoint subscribes to, at most MAX_REDELIVER_EVENTS. A
 * delivery still pending, waiting for a retry, is made due now (its attempts and round go on); one being attempted
 * is left to that attempt. EndpointNotFound, EndpointDisabled.
 */
export async function redeliver(
  accountId: string,
  endpointId: string,
  request: RedeliverRequest,
): Promise<RedeliverResult> {
  const item = await getItem(webhookKeys.endpoint(accountId, endpointId));
  if (!item) throw new EndpointNotFound();
  const endpoint = endpointOf(item);
  if (!endpoint.enabled) throw new EndpointDisabled();
  let events: EventSummary[];
  let more = false;
  if ('eventId' in request) {
    const event = await eventSummary(accountId, request.eventId);
    if (!event) throw new UnknownEvent();
    events = [event];
  } else {
    const wants = subscribes(endpoint);
    const found = await eventsSince(accountId, request.since, MAX_REDELIVER_EVENTS * 4);
    const wanted = found.events.filter((e) => wants(e.type));
    events = wanted.slice(0, MAX_REDELIVER_EVENTS);
    more = found.more || wanted.length > MAX_REDELIVER_EVENTS;
  }
  const now = Date.now();
  await inParallel(events, (event) => queueDelivery(accountId, endpointId, event, now, 'again'));
  if (events.length > 0) await markDue(accountId, endpointId, now);
  return { eventIds: events.map((e) => e.id), more };
}

/** An event's id and type (its body is not read), or undefined. */
async function eventSummary(accountId: string, eventId: string): Promise<EventSummary | undefined> {
  const body = await getEventBody(accountId, eventId);
  if (!body) return undefined;
  const { id, type, created_at } = JSON.parse(body.toString('utf8')) as {
    id: string;
    type: string;
    created_at: string;
  };
  return { id, type, at: Date.parse(created_at) };
}

/**
 * The fan-out's write: a pending delivery of each event to the endpoint, due now, then the endpoint's due entry.
 * A delivery that exists already (a stream record fanned out again) is left as it is. Answers how many were
 * created; 0 when the endpoint is gone.
 */
export async function addDeliveries(
  accountId: string,
  endpointId: string,
  events: Pick<EventSummary, 'id' | 'type'>[],
  now = Date.now(),
): Promise<number> {
  const created = await inParallel(events, (event) =>
    queueDelivery(accountId, endpointId, event, now, 'new'),
  );
  // Also when none was created: a fan-out repeated after a crash between its puts and this write finishes it.
  if (events.length > 0) await markDue(accountId, endpointId, now);
  return created.filter(Boolean).length;
}

/**
 * One delivery made pending (due `now`) with its pending item, in one transaction. `new`: only where none exists.
 * `again`: a delivery that ended is reopened for a new round (its attempts go on); one that does not exist is
 * created; one still pending is made due now (bringForward). Answers whether it wrote.
 */
async function queueDelivery(
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
async function bringForward(accountId: string, endpointId: string, delivery: Delivery, now: number) {
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

/**
 * After pending items were written: bumps the endpoint's `dueVersion`, and lowers its due entry to `dueAt` when
 * that is earlier and no live lease holds the endpoint (its holder finds the new items itself, and its release
 * sees the bump). Answers false when the endpoint is gone.
 */
export async function markDue(accountId: string, endpointId: string, dueAt: number): Promise<boolean> {
  const now = Date.now();
  const due = keys.due(accountId, endpointId, dueAt);
  const key = webhookKeys.endpoint(accountId, endpointId);
  try {
    await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: key,
          UpdateExpression: 'SET gsi1pk = :pk, gsi1sk = :sk ADD dueVersion :one',
          ConditionExpression:
            'attribute_exists(pk) AND (attribute_not_exists(gsi1sk) OR gsi1sk > :sk) AND ' +
            '(attribute_not_exists(leaseUntil) OR leaseUntil < :now)',
          ExpressionAttributeValues: { ':pk': due.gsi1pk, ':sk': due.gsi1sk, ':one': 1, ':now': now },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    return true;
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    if (!itemOnConditionFailure(error)) return false;
  }
  try {
    await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: key,
          UpdateExpression: 'ADD dueVersion :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1 },
        }),
      ),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** An entry of the due index: an endpoint with work due (or a lease ending) at `dueAt`. */
export interface DueEntry {
  accountId: string;
  endpointId: string;
  dueAt: number;
}

/** Endpoints due at or before `now`, earliest first, at most `limit` (the due index: eventually consistent). */
export async function dueEndpoints(now: number, limit: number): Promise<DueEntry[]> {
  const items = await queryAll(
    {
      TableName: tableName(),
      IndexName: keys.dueIndex,
      KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk < :before',
      ExpressionAttributeValues: { ':pk': keys.duePartition, ':before': keys.dueBefore(now) },
      ProjectionExpression: 'gsi1sk',
    },
    limit,
  );
  return items.map((item) => keys.parseDue(String(item.gsi1sk)));
}

/** An endpoint as its lease holder sees it: the endpoint and the dispatcher's fields. */
export interface LeasedEndpoint {
  endpoint: Endpoint;
  /** Attempts recorded so far: the next one recorded is number attemptCount + 1. */
  attemptCount: number;
  leaseUntil: number;
}

/** The fields of the endpoint item that are the dispatcher's, not the Endpoint's. */
const DISPATCH_FIELDS = ['leaseOwner', 'leaseUntil', 'dueVersion', 'attemptCount'] as const;

function leasedOf(item: Record<string, unknown>): LeasedEndpoint {
  const endpoint = endpointOf(item) as Endpoint & Record<string, unknown>;
  for (const field of DISPATCH_FIELDS) delete endpoint[field];
  return {
    endpoint,
    attemptCount: Number(item.attemptCount ?? 0),
    leaseUntil: Number(item.leaseUntil ?? 0),
  };
}

/**
 * Takes the endpoint's lease for `owner` until now + leaseMs, when it is due now and no live lease holds it; its
 * due entry moves to the lease's end (a holder that dies leaves it due then). Answers the endpoint as stored, or
 * undefined when it is not due, is held, or is gone.
 */
export async function leaseEndpoint(
  accountId: string,
  endpointId: string,
  owner: string,
  leaseMs: number,
): Promise<LeasedEndpoint | undefined> {
  const now = Date.now();
  const until = now + leaseMs;
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: webhookKeys.endpoint(accountId, endpointId),
        UpdateExpression: 'SET leaseOwner = :owner, leaseUntil = :until, gsi1sk = :sk',
        ConditionExpression:
          'attribute_exists(gsi1sk) AND gsi1sk < :before AND ' +
          '(attribute_not_exists(leaseUntil) OR leaseUntil < :now)',
        ExpressionAttributeValues: {
          ':owner': owner,
          ':until': until,
          ':sk': keys.due(accountId, endpointId, until).gsi1sk,
          ':before': keys.dueBefore(now),
          ':now': now,
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Attributes ? leasedOf(Attributes) : undefined;
  } catch (error) {
    if (isConditionFailure(error) || isTransactionConflict(error)) return undefined;
    throw error;
  }
}

/**
 * Extends `owner`'s lease to now + leaseMs, and reads the endpoint again (a management write may have changed its
 * URL, secrets or events, or disabled it). Undefined when the lease was lost (or the endpoint deleted).
 */
export async function renewLease(
  accountId: string,
  endpointId: string,
  owner: string,
  leaseMs: number,
): Promise<LeasedEndpoint | undefined> {
  const until = Date.now() + leaseMs;
  try {
    const { Attributes } = await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: webhookKeys.endpoint(accountId, endpointId),
          UpdateExpression: 'SET leaseUntil = :until, gsi1sk = :sk',
          ConditionExpression: 'leaseOwner = :owner',
          ExpressionAttributeValues: {
            ':owner': owner,
            ':until': until,
            ':sk': keys.due(accountId, endpointId, until).gsi1sk,
          },
          ReturnValues: 'ALL_NEW',
        }),
      ),
    );
    return Attributes ? leasedOf(Attributes) : undefined;
  } catch (error) {
    if (isConditionFailure(error)) return undefined;
    throw error;
  }
}

/**
 * Ends `owner`'s lease: the due entry becomes the earliest pending delivery's due, or goes when none is pending.
 * Written on the condition that no pending item was added since the earliest was read (dueVersion), else read
 * again. Nothing when the lease is not `owner`'s any more.
 */
export async function releaseEndpoint(accountId: string, endpointId: string, owner: string): Promise<void> {
  const key = webhookKeys.endpoint(accountId, endpointId);
  for (;;) {
    const item = await getItem(key);
    if (!item || item.leaseOwner !== owner) return;
    const version = item.dueVersion as number | undefined;
    const [earliest] = await queryAll(
      {
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': keys.pendingPartition(accountId, endpointId) },
        ProjectionExpression: 'sk',
        ConsistentRead: true,
      },
      1,
    );
    const due = earliest
      ? keys.due(accountId, endpointId, keys.parsePending(String(earliest.sk)).dueAt)
      : undefined;
    try {
      await retryOnConflict(() =>
        dynamo.send(
          new UpdateCommand({
            TableName: tableName(),
            Key: key,
            UpdateExpression: due
              ? 'SET gsi1pk = :pk, gsi1sk = :sk REMOVE leaseOwner, leaseUntil'
              : 'REMOVE gsi1pk, gsi1sk, leaseOwner, leaseUntil',
            ConditionExpression: `leaseOwner = :owner AND ${version === undefined ? 'attribute_not_exists(dueVersion)' : 'dueVersion = :version'}`,
            ExpressionAttributeValues: {
              ':owner': owner,
              ...(version === undefined ? {} : { ':version': version }),
              ...(due ? { ':pk': due.gsi1pk, ':sk': due.gsi1sk } : {}),
            },
          }),
        ),
      );
      return;
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
    }
  }
}

/** A pending delivery as the runner finds it. */
export interface PendingDelivery {
  eventId: string;
  eventType: string;
  dueAt: number;
}

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
  return items.map((item) => ({
    ...keys.parsePending(String(item.sk)),
    eventType: String(item.eventType),
  }));
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
  const now = Date.now();
  try {
    const { Attributes } = await retryOnConflict(() =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.delivery(accountId, endpointId, pending.eventId),
          UpdateExpression: 'SET leaseOwner = :owner, leaseUntil = :until',
          ConditionExpression:
            '#state = :pending AND nextAt = :due AND ' +
            '(attribute_not_exists(leaseUntil) OR leaseUntil < :now OR leaseOwner = :owner)',
          ExpressionAttributeNames: { '#state': 'state' },
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
    const live = held?.state === 'pending' && held.nextAt === pending.dueAt;
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

/** What an attempt's record changes of the endpoint. */
export type EndpointOutcome =
  | { kind: 'success' }
  | { kind: 'failure' }
  /** A failure that disables the endpoint (410, or failing for DISABLE_AFTER_MS). */
  | { kind: 'disable'; reason: string };

/** One attempt's outcome, recorded by the claim's holder. */
export interface AttemptRecord {
  accountId: string;
  endpointId: string;
  owner: string;
  /** The claimed delivery (its attempts count before this one) and the due of the pending item it came from. */
  delivery: Delivery;
  dueAt: number;
  attempt: Omit<DeliveryAttempt, 'eventId' | 'eventType' | 'attempt' | 'nextAttemptAt'>;
  /** The delivery after this attempt: pending again at nextAt, or ended. */
  next: { state: 'pending'; nextAt: number } | { state: 'succeeded' } | { state: 'failed' };
  endpoint: EndpointOutcome;
  /** This attempt's number in the endpoint's log: the holder's attemptCount + 1. */
  logNumber: number;
  /**
   * A failure: since when the endpoint has been failing (the first failure since its last success), as its holder
   * knows it when recording; null or absent: since this attempt.
   */
  failingSince?: number | null;
}

/** The attempt's number in the endpoint's log was taken (the count moved since it was read): read it, again. */
export class LogNumberTaken extends Error {
  constructor() {
    super("The attempt's log number was taken");
  }
}

/** The claim on the delivery was lost (expired and taken by another runner): nothing was recorded. */
export class ClaimLost extends Error {
  constructor() {
    super('The delivery is no longer claimed by this runner');
  }
}

/**
 * Records an attempt in one transaction: the delivery's new state (and the end of its claim), its pending item
 * moved to the next due or deleted, the attempt in the endpoint's log (and the oldest kept one dropped), the
 * endpoint's count, success or failure marks, and disabling. Throws ClaimLost, LogNumberTaken, or
 * EndpointNotFound (the endpoint was deleted: nothing to record).
 */
export async function recordAttempt(record: AttemptRecord): Promise<void> {
  const { accountId, endpointId, delivery, next, attempt, logNumber } = record;
  const now = Date.now();
  const number = delivery.attempts + 1;
  // Never the pending item's own key again (a transaction cannot delete and put one item).
  const nextAt = next.state === 'pending' ? Math.max(next.nextAt, record.dueAt + 1) : null;
  const expires_at = retentionFrom(now);
  const actions: CommitAction[] = [
    {
      what: 'webhook_delivery',
      action: {
        Update: {
          TableName: tableName(),
          Key: keys.delivery(accountId, endpointId, delivery.eventId),
          UpdateExpression:
            'SET #state = :state, attempts = :n, nextAt = :nextAt, lastStatus = :status, lastError = :error, ' +
            'lastAttemptAt = :at, updatedAt = :now, expires_at = :expires REMOVE leaseOwner, leaseUntil',
          ConditionExpression: 'leaseOwner = :owner AND attempts = :before',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: {
            ':state': next.state,
            ':n': number,
            ':nextAt': nextAt,
            ':status': attempt.status,
            ':error': attempt.error,
            ':at': attempt.at,
            ':now': now,
            ':expires': expires_at,
            ':owner': record.owner,
            ':before': delivery.attempts,
          },
        },
      },
      refused: () => new ClaimLost(),
    },
    {
      what: 'webhook_pending',
      action: {
        Delete: {
          TableName: tableName(),
          Key: keys.pending(accountId, endpointId, record.dueAt, delivery.eventId),
        },
      },
    },
    ...(nextAt === null
      ? []
      : [
          {
            what: 'webhook_pending_next',
            action: {
              Put: {
                TableName: tableName(),
                Item: {
                  ...keys.pending(accountId, endpointId, nextAt, delivery.eventId),
                  type: PENDING_TYPE,
                  eventId: delivery.eventId,
                  eventType: delivery.eventType,
                  expires_at: retentionFrom(nextAt),
                },
              },
            },
          },
        ]),
    {
      what: 'webhook_attempt',
      action: {
        Put: {
          TableName: tableName(),
          Item: {
            ...keys.attempt(accountId, endpointId, logNumber),
            type: ATTEMPT_TYPE,
            eventId: delivery.eventId,
            eventType: delivery.eventType,
            attempt: number,
            at: attempt.at,
            status: attempt.status,
            error: attempt.error,
            durationMs: attempt.durationMs,
            nextAttemptAt: nextAt,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      refused: () => new LogNumberTaken(),
    },
    ...(logNumber > ATTEMPTS_KEPT
      ? [
          {
            what: 'webhook_attempt_dropped',
            action: {
              Delete: {
                TableName: tableName(),
                Key: keys.attempt(accountId, endpointId, logNumber - ATTEMPTS_KEPT),
              },
            },
          },
        ]
      : []),
    endpointUpdate(record, now),
  ];
  await retryOnConflict(() => commit(actions));
}

function endpointUpdate(record: AttemptRecord, now: number): CommitAction {
  const sets = ['attemptCount = :count'];
  const values: Record<string, unknown> = { ':count': record.logNumber };
  if (record.endpoint.kind === 'success') {
    sets.push('lastSuccessAt = :now', 'failingSince = :null');
    values[':now'] = now;
    values[':null'] = null;
  } else {
    sets.push('failingSince = :since');
    values[':since'] = record.failingSince ?? record.attempt.at;
    if (record.endpoint.kind === 'disable') {
      sets.push('enabled = :false', 'disabledReason = :reason', 'updatedAt = :updated');
      values[':false'] = false;
      values[':reason'] = record.endpoint.reason;
      values[':updated'] = formatTimestamp(now * 1000);
    }
  }
  const counted = record.logNumber === 1 ? 'attribute_not_exists(attemptCount)' : 'attemptCount = :previous';
  if (record.logNumber > 1) values[':previous'] = record.logNumber - 1;
  return {
    what: 'webhook_endpoint',
    action: {
      Update: {
        TableName: tableName(),
        Key: webhookKeys.endpoint(record.accountId, record.endpointId),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: `attribute_exists(pk) AND ${counted}`,
        ExpressionAttributeValues: values,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      },
    },
    refused: (held) => (held ? new LogNumberTaken() : new EndpointNotFound()),
  };
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
  const now = Date.now();
  try {
    await retryOnConflict(() =>
      transact([
        {
          Update: {
            TableName: tableName(),
            Key: keys.delivery(accountId, endpointId, pending.eventId),
            UpdateExpression:
              'SET #state = :failed, nextAt = :null, lastError = :reason, updatedAt = :now REMOVE leaseOwner, leaseUntil',
            ConditionExpression: '#state = :pending AND nextAt = :due',
            ExpressionAttributeNames: { '#state': 'state' },
            ExpressionAttributeValues: {
              ':failed': 'failed',
              ':null': null,
              ':reason': reason,
              ':now': now,
              ':pending': 'pending',
              ':due': pending.dueAt,
            },
          },
        },
        {
          Delete: {
            TableName: tableName(),
            Key: keys.pending(accountId, endpointId, pending.dueAt, pending.eventId),
          },
        },
      ]),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    // Not pending at this due any more: only the stale pending item may be left.
    await dynamo.send(
      new DeleteCommand({
        TableName: tableName(),
        Key: keys.pending(accountId, endpointId, pending.dueAt, pending.eventId),
      }),
    );
  }
}

/** The endpoint's count of recorded attempts (after LogNumberTaken), or undefined when it is gone. */
export async function attemptCountOf(accountId: string, endpointId: string): Promise<number | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: tableName(),
      Key: webhookKeys.endpoint(accountId, endpointId),
      ProjectionExpression: 'pk, attemptCount',
      ConsistentRead: true,
    }),
  );
  return Item ? Number(Item.attemptCount ?? 0) : undefined;
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

function deliveryOf(item: Record<string, unknown>): Delivery {
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

function attemptOf(item: Record<string, unknown>): DeliveryAttempt {
  return {
    eventId: String(item.eventId),
    eventType: String(item.eventType),
    attempt: Number(item.attempt),
    at: Number(item.at),
    status: item.status == null ? null : Number(item.status),
    error: item.error == null ? null : String(item.error),
    durationMs: Number(item.durationMs),
    nextAttemptAt: item.nextAttemptAt == null ? null : Number(item.nextAttemptAt),
  };
}

const retentionFrom = (ms: number) => Math.floor(ms / 1000) + DELIVERY_RETENTION_SECONDS;

/** Runs `work` over `list`, WRITE_CONCURRENCY at a time; answers the results in order. */
async function inParallel<T, R>(list: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(list.length);
  let next = 0;
  const lane = async () => {
    while (next < list.length) {
      const i = next++;
      results[i] = await work(list[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(WRITE_CONCURRENCY, list.length) }, lane));
  return results;
}
