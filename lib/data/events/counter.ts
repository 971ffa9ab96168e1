import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import { setTimeout as pause } from 'node:timers/promises';
import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { eventKeys } from '../keys/events.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isTransactionConflict } from '../store/errors.ts';
import { closePlace } from './close.ts';
import { placeOf } from './lanes.ts';

/** A shard's place counter (./lanes.ts): the takes that hand out its places, and its reads and writes. */

/** Attempts of a take refused by a transaction in flight on the counter (none of this version's: bumps are single writes). */
const TAKE_ATTEMPTS = 8;
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
  const shared = sharedTakes.getStore();
  return shared ? takeShared(shared, accountId, shard, count) : takeOnce(accountId, shard, count);
}

/** Takes waiting for a shard's take in flight, by account and shard (sharingPlaceTakes). */
type SharedTakes = Map<string, { count: number; waiting: Promise<number[]>; sent: boolean }>;
const sharedTakes = new AsyncLocalStorage<SharedTakes>();

/**
 * Runs a runner's pass (the due runner's many changes of one account at once: lib/tickets/breaches.ts) with its
 * takes of one shard's places shared: while one take of a shard is in flight, the takes asked meanwhile wait and go
 * as one UpdateItem when it answers, each handed its own consecutive places in the order asked. So a burst of
 * changes takes a shard's places in a few writes instead of one each. Each change's commit lands or not on its own,
 * and its places are closed when it does not (as one take's own: close.ts); a shared take that fails fails every
 * change that waited on it, as its own would have.
 */
export function sharingPlaceTakes<T>(work: () => Promise<T>): Promise<T> {
  return sharedTakes.run(new Map(), work);
}

async function takeShared(shared: SharedTakes, accountId: string, shard: number, count: number) {
  const key = `${accountId}#${shard}`;
  let next = shared.get(key);
  if (!next || next.sent) {
    const ahead = next?.waiting.catch(() => undefined);
    const group = { count: 0, sent: false, waiting: Promise.resolve<number[]>([]) };
    group.waiting = (async () => {
      await ahead;
      group.sent = true;
      return takeOnce(accountId, shard, group.count);
    })();
    const forget = () => shared.get(key) === group && shared.delete(key);
    group.waiting.then(forget, forget);
    shared.set(key, group);
    next = group;
  }
  const from = next.count;
  next.count += count;
  const places = await next.waiting;
  return places.slice(from, from + count);
}

async function takeOnce(accountId: string, shard: number, count: number): Promise<number[]> {
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
  await Promise.all(Array.from({ length: count }, (_, i) => closePlace(accountId, placeOf(shard, last - i))));
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

/** Writes an item as a place's (the benchmark's bulk loader sets counters so). Exposed for tests and bench. */
export async function setShardCounter(accountId: string, shard: number, last: number): Promise<void> {
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: { ...eventKeys.counter(accountId, shard), n: last, at: nowMillis() },
    }),
  );
}
