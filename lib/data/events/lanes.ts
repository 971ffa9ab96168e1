import { randomBytes } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { timeLeftMs } from '#lib/request-scope.ts';
import { nowMillis } from '#lib/time.ts';
import { dynamo, tableName } from '../client.ts';
import { isConditionFailure, isTransactionConflict, itemOnConditionFailure } from '../errors.ts';
import { uuidParts } from '../index/order-key.ts';
import { EVENT_PLACE_BASE, EVENT_SHARDS, eventKeys } from '../keys.ts';
import { eventId } from './ids.ts';
import { EVENT_RETENTION_SECONDS } from './item.ts';

/**
 * The feed's lanes (the feed's design: ../events.ts; docs/data-model.md, "Events"). A lane is a run of places with
 * one counter: shard k (0..15) hands out EVENT_PLACE_BASE + n * 16 + k, n = 0, 1, … from its counter item
 * `EVENT_SEQ#<acc>#<k>`. Every object's events go to one shard (its creation time's), so they take rising places.
 * A reader that must pass a place no writer was handed yet moves the lane's counter past it (a bump: one
 * conditional UpdateItem that records on the counter the places it skips) and then voids them for good with one
 * range item.
 */

/** How many of its own places past the page's last place a reader moves a lagging shard (so it does not lag again at once). */
export const BUMP_AHEAD = 16;

export const laneOf = (seq: number) => (seq - EVENT_PLACE_BASE) % EVENT_SHARDS;
/** A place's number in its lane: the shard counter's n. */
export const nthOf = (seq: number) => Math.floor((seq - EVENT_PLACE_BASE) / EVENT_SHARDS);
export const placeOf = (lane: number, nth: number) => EVENT_PLACE_BASE + nth * EVENT_SHARDS + lane;
/** The lane's first place at or after `seq`. */
export function laneAtOrAfter(lane: number, seq: number): number {
  const first = EVENT_PLACE_BASE + lane;
  return seq <= first ? first : first + Math.ceil((seq - first) / EVENT_SHARDS) * EVENT_SHARDS;
}
/** Every lane: the shards. */
export const LANES = Array.from({ length: EVENT_SHARDS }, (_, k) => k);

/** FNV-1a of a string: a shard spread evenly whatever the string's shape. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** The shard of an object created at `createdUs` (its uuid carries that time: eventShardOfObject agrees). */
export const eventShardOfCreation = (createdUs: number) => hash(String(createdUs)) % EVENT_SHARDS;

/**
 * The shard every event of an object goes to: its creation time's (an ordered uuid carries it, so a create knows
 * its shard before its uuid exists), else its uuid's, else (an object with no uuid: tests' drafts) its text's. A
 * message goes with its ticket (`ticket_uuid`): a conversation's events share one shard, so the feed keeps the
 * conversation's order, and a message's event stays in commit order with its ticket's.
 */
export function eventShardOfObject(object: unknown): number {
  const field = (name: string) =>
    typeof object === 'object' && object !== null && name in object
      ? String((object as Record<string, unknown>)[name])
      : undefined;
  const uuid = field('uuid') ?? field('ticket_uuid');
  if (uuid === undefined) return hash(JSON.stringify(object) ?? '') % EVENT_SHARDS;
  const parts = uuidParts(uuid);
  return parts ? eventShardOfCreation(parts.createdMicros) : hash(uuid) % EVENT_SHARDS;
}

/** Attempts of a take refused by a transaction in flight on the counter (none of this version's: bumps are single writes). */
const TAKE_ATTEMPTS = 8;
/** Attempts of a bump (each finding the counter moved). */
const BUMP_ATTEMPTS = 4;
/** The time a page keeps for itself: no bump or close is started with less left of the request's deadline. */
export const SETTLE_RESERVE_MS = 2_000;
/** A pause before another attempt: 10, 20, 40 … ms (at most 160), jittered. */
const backoff = (attempt: number) => Math.floor((5 + Math.random() * 5) * 2 ** Math.min(attempt, 5));

/**
 * Takes `count` consecutive places of a shard: one UpdateItem of its counter (1 write unit), `at` set to now (when
 * the shard's last place was handed out) and `by` to a token of this take. A transaction in flight on the counter
 * would refuse it (TransactionConflictException on DynamoDB; readers' bumps are single UpdateItems, so only a
 * version before this one's): tried again. When the answer is lost (the take
 * may have happened), the counter is read: if its last take is still this one, its places are closed at once, so
 * that they hold no later event for the settle window; else (another take since) they are left to the readers.
 */
export async function takeShardPlaces(accountId: string, shard: number, count: number): Promise<number[]> {
  const by = randomBytes(6).toString('base64url');
  for (let attempt = 1; ; attempt++) {
    try {
      const { Attributes } = await dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key: eventKeys.counter(accountId, shard),
          UpdateExpression: 'SET #n = if_not_exists(#n, :none) + :count, #at = :now, #by = :by',
          ExpressionAttributeNames: { '#n': 'n', '#at': 'at', '#by': 'by' },
          ExpressionAttributeValues: { ':none': -1, ':count': count, ':now': nowMillis(), ':by': by },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      const last = Number(Attributes?.n);
      return Array.from({ length: count }, (_, i) => placeOf(shard, last - count + 1 + i));
    } catch (error) {
      if (isTransactionConflict(error) && attempt < TAKE_ATTEMPTS) {
        await pause(backoff(attempt));
        continue;
      }
      await closeLostTake(accountId, shard, count, by).catch(() => undefined);
      throw error;
    }
  }
}

/** Closes the places of a take whose answer was lost, when the counter's last take is that one (`by`). */
async function closeLostTake(accountId: string, shard: number, count: number, by: string): Promise<void> {
  const held = await readCounter(accountId, shard);
  if (held.by !== by) return;
  const last = Number(held.n);
  const { closePlace } = await import('./places.ts');
  await Promise.all(Array.from({ length: count }, (_, i) => closePlace(accountId, placeOf(shard, last - i))));
}

/** Range writes a page started and awaits before it answers: each answers its failure (and its range's id), if any. */
export type PendingWrites = Promise<{ error: unknown; id: string } | undefined>[];

/** What a bump found or did. */
export type BumpOutcome =
  /** The lane's places `from`..`to` (a range of its own places) are now void: this bump's range, or another reader's. */
  | { kind: 'covered'; from: number; to: number; id?: string }
  /** The place was handed out to a writer: open until it commits or is closed (counter's last take at `at`). */
  | { kind: 'handed'; last: number; at: number }
  /** The counter moved at every attempt (or the deadline came near): unknown this page. */
  | { kind: 'busy' };

/**
 * Where a reader moves a lagging shard so that it covers `place`: BUMP_AHEAD of its places further, so that it does
 * not lag again at once (the shard's next writers take the places after it).
 */
export const bumpTarget = (lane: number, place: number) =>
  placeOf(lane, nthOf(laneAtOrAfter(lane, place)) + BUMP_AHEAD);

/**
 * Moves lane `lane`'s counter past `gap` (a place of the lane no item holds) when it has not handed it out: on
 * the condition that the counter stands at `observed` (the place before the gap, as a lane whose places below are
 * all read has it), it is set to `target`, recording that it skipped the places from the one after `observed` to
 * `target` (bumpShard: one UpdateItem, then their range void item, awaited by the page through `pending`, or here
 * when none is given), so no writer can ever take them. When the counter moved meanwhile, its answer
 * says what happened (ReturnValuesOnConditionCheckFailure): another reader's bump covers the gap, or a writer
 * took it (open), or the counter is below the gap still (tried again from there).
 */
export async function bumpLane(
  accountId: string,
  lane: number,
  gap: number,
  target: number,
  pending?: PendingWrites,
): Promise<BumpOutcome> {
  let observed = nthOf(gap) - 1;
  for (let attempt = 1; attempt <= BUMP_ATTEMPTS && timeLeftMs() > SETTLE_RESERVE_MS; attempt++) {
    try {
      const id = await bumpShard(accountId, lane, observed, nthOf(target), pending);
      return { kind: 'covered', from: placeOf(lane, observed + 1), to: target, id };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const found = shardCounter(lane, itemOnConditionFailure(error, 0) ?? {});
      if (found.bump && found.bump.from <= gap && gap <= found.bump.to) {
        return { kind: 'covered', from: found.bump.from, to: found.bump.to };
      }
      if (found.last >= nthOf(gap)) return { kind: 'handed', last: found.last, at: found.at };
      observed = found.last;
    }
  }
  return { kind: 'busy' };
}

/** A lane's counter as stored (strongly consistent; a read is not refused by a transaction in flight). */
async function readCounter(accountId: string, shard: number): Promise<Record<string, unknown>> {
  const { Item } = await dynamo.send(
    new GetCommand({
      TableName: tableName(),
      Key: eventKeys.counter(accountId, shard),
      ConsistentRead: true,
    }),
  );
  return Item ?? {};
}

interface CounterState {
  last: number;
  at: number;
  bump?: { from: number; to: number };
}

function shardCounter(lane: number, item: Record<string, unknown>): CounterState {
  const from = item.bump_from;
  return {
    last: item.n === undefined ? -1 : Number(item.n),
    at: Number(item.at ?? 0),
    ...(from !== undefined
      ? { bump: { from: placeOf(lane, Number(from)), to: placeOf(lane, Number(item.bump_to)) } }
      : {}),
  };
}

/** The range void of shard places `from`..`to` (its key is `to`'s; `step`: the distance between a shard's places). */
const rangeItem = (accountId: string, from: number, to: number) => {
  const id = eventId(to);
  return {
    id,
    Item: {
      ...eventKeys.place(accountId, to),
      type: eventKeys.itemType.void,
      id,
      from,
      step: EVENT_SHARDS,
      at: nowMillis(),
      expires_at: Math.floor(nowMillis() / 1000) + EVENT_RETENTION_SECONDS,
    },
  };
};

/**
 * Moves shard `shard`'s counter from `observed` to `target` (one conditional UpdateItem, 1 write unit; no
 * transaction, so nothing of a writer's take waits for it or is cancelled by it), recording on the counter the
 * places it skips (`bump_from`..`bump_to`, the counter's own n's): from then on no writer can be handed them, and a
 * reader whose bump meets the moved counter learns from it that they are void. Then the range void item says so
 * for good (after the counter's next bump, too): a put that cannot be wrong (no writer was or will be handed a
 * place it covers), so it needs no condition and nothing in one transaction with the update. When it is not
 * written (the put failed, the reader died), a later reader finds those places past the counter's next range and
 * treats them as handed out: it closes them after the settle window (latency only, never a wrong answer).
 */
async function bumpShard(
  accountId: string,
  shard: number,
  observed: number,
  target: number,
  pending: PendingWrites | undefined,
): Promise<string> {
  const range = rangeItem(accountId, placeOf(shard, observed + 1), placeOf(shard, target));
  await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: eventKeys.counter(accountId, shard),
      UpdateExpression: 'SET #n = :target, #at = :now, #from = :from, #to = :target',
      ConditionExpression: observed < 0 ? 'attribute_not_exists(#n)' : '#n = :observed',
      ExpressionAttributeNames: { '#n': 'n', '#at': 'at', '#from': 'bump_from', '#to': 'bump_to' },
      ExpressionAttributeValues: {
        ':target': target,
        ':now': nowMillis(),
        ':from': observed + 1,
        ...(observed < 0 ? {} : { ':observed': observed }),
      },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    }),
  );
  // The page awaits it before it answers, beside its serving: a failure fails the page when its cursor names the
  // range (else the counter holds the range, and a later reader closes those places after the settle window).
  const written = dynamo.send(new PutCommand({ TableName: tableName(), Item: range.Item })).then(
    () => undefined,
    (error: unknown) => ({ error, id: range.id }),
  );
  if (pending) pending.push(written);
  else {
    const failed = await written;
    if (failed) throw failed.error;
  }
  return range.id;
}

/** Writes an item as a place's (the benchmark's bulk loader sets counters so). Exposed for tests and bench. */
export async function setShardCounter(accountId: string, shard: number, last: number): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...eventKeys.counter(accountId, shard), n: last, at: nowMillis() },
    }),
  );
}
