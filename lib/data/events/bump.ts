import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { timeLeftMs } from '#lib/request-scope.ts';
import { nowMillis } from '#lib/time.ts';
import { EVENT_SHARDS, eventKeys } from '../keys/events.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure, itemOnConditionFailure } from '../store/errors.ts';
import { eventId } from './ids.ts';
import { EVENT_RETENTION_SECONDS } from './item.ts';
import { laneAtOrAfter, nthOf, placeOf } from './lanes.ts';

/**
 * Bumps (./lanes.ts): a reader that must pass a place no writer was handed yet moves the lane's counter past it,
 * recording the places it skips, then voids them for good with one range item.
 */

/** How many of its own places past the page's last place a reader moves a lagging shard (so it does not lag again at once). */
export const BUMP_AHEAD = 16;

/** Attempts of a bump (each finding the counter moved). */
const BUMP_ATTEMPTS = 4;
/** The time a page keeps for itself: no bump or close is started with less left of the request's deadline. */
export const SETTLE_RESERVE_MS = 2_000;

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
