import { UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { ServiceUnavailable } from '#lib/errors.ts';
import { inExemptScope, type RateCount, requestScope } from '#lib/request-scope.ts';
import { configVersionOf, rulesVersionOf } from '../accounts/config-version.ts';
import { accountKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure, itemOnConditionFailure } from '../store/errors.ts';

/**
 * Requests per account and fixed minute (decisions.md, "Rate limits per plan"), counted on the account's rate
 * item (`RATE#<acc>`, an item of its own: it takes one write per request, and shares it with nothing): two
 * attributes, one for even and one for odd minutes, each holding `minute × 2^20 + count`.
 * A request adds one to its minute's slot on the condition that the slot is of this minute and below the limit
 * (or absent) and that the other slot holds no newer minute, and removes the other slot (an older minute). So one
 * conditional UpdateItem counts exactly (N concurrent requests over a limit L: exactly L pass), a refused request
 * changes nothing, and the item never grows. The slot of this minute can only hold an older minute when the
 * account's previous request was an even number (≥ 2) of minutes ago: that first request after an idle spell then
 * resets it with a second call (and those racing it count again with a third).
 * No write ever removes or resets a newer minute than its own, so the newest minute the item holds never moves
 * back: a request stamped with an older minute than that one (a late request of minute m after minute m+1's
 * first, or a clock behind) counts in the newest minute, never again in its own, whose count may be gone. So no
 * minute passes more than its limit, whatever the interleaving.
 *
 * Every request runs its count beside its first round trip, and every write of the request waits for the
 * decision (the middleware at the end of this file): a refused create takes no ticket number.
 */
export interface RateWindow {
  limit: number;
  /** Epoch milliseconds of the request. */
  nowMs: number;
}

export interface RateOutcome {
  allowed: boolean;
  limit: number;
  /** Requests counted in this minute, this one included (limit when refused). */
  count: number;
  /** Epoch seconds at which the minute ends. */
  resetAt: number;
  /**
   * The account's configuration version the count read back (../accounts/config-version.ts): what the request's
   * cached configuration must be at least as new as (0 on a refused count, which reads no configuration).
   */
  configVersion: number;
  /** The account's rules version the count read back (the rules cache's: lib/rules/cache.ts; 0 on a refused count). */
  rulesVersion: number;
}

const MINUTE_SHIFT = 2 ** 20;
const minuteOf = (nowMs: number) => Math.floor(nowMs / 60_000);
const slotOf = (minute: number) => `rate${minute % 2}`;

/** A data-layer signal, not an answer: the HTTP stack turns the request's refused count into its 429. */
export class RateLimited extends Error {
  constructor(readonly outcome: RateOutcome) {
    super('Too many requests this minute');
  }
}

interface RateParts {
  set: string;
  remove: string;
  condition: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/**
 * The parts of an UpdateItem that count a request in `minute` (`reset`: its slot holds an older minute). Both
 * kinds hold only while the other slot holds no newer minute (the turn: minute + 1 has begun), which they remove.
 */
function rateParts(minute: number, limit: number, reset: boolean): RateParts {
  const base = minute * MINUTE_SHIFT;
  const otherOlder = '(attribute_not_exists(#rother) OR #rother < :rbase)';
  return {
    set: reset ? '#rcur = :rbase1' : '#rcur = if_not_exists(#rcur, :rbase) + :rone',
    remove: '#rother',
    condition: reset
      ? `#rcur < :rbase AND ${otherOlder}`
      : `(attribute_not_exists(#rcur) OR (#rcur >= :rbase AND #rcur < :rcap)) AND ${otherOlder}`,
    names: { '#rcur': slotOf(minute), '#rother': slotOf(minute + 1) },
    values: reset
      ? { ':rbase': base, ':rbase1': base + 1 }
      : { ':rbase': base, ':rone': 1, ':rcap': base + limit },
  };
}

function outcomeOf(
  minute: number,
  limit: number,
  value: unknown,
  allowed: boolean,
  item: Record<string, unknown> = {},
): RateOutcome {
  return {
    allowed,
    limit,
    count: allowed ? Number(value) - minute * MINUTE_SHIFT : limit,
    resetAt: (minute + 1) * 60,
    configVersion: configVersionOf(item),
    rulesVersion: rulesVersionOf(item),
  };
}

/**
 * How many times a request tries to count: each refused attempt says what the slots hold, and the next attempt
 * follows it (count, reset, count, or count in a newer minute); only concurrent requests moving the slots
 * meanwhile take more.
 */
const MAX_COUNT_ATTEMPTS = 6;

/** The minute a slot's value is of (undefined: absent). */
const heldMinute = (value: unknown) =>
  value === undefined ? undefined : Math.floor(Number(value) / MINUTE_SHIFT);

/**
 * One conditional UpdateItem of the rate item counting a request, again as the slots it finds say; throws
 * RateLimited (nothing written) over the limit, and only then. The slot of an older minute is reset, and a reset
 * that lost to a concurrent one (requests racing after an idle spell) counts again in the minute the winner
 * opened. A newer minute than the request's in either slot: the request counts in that one (module comment).
 */
async function countRequest(accountId: string, window: RateWindow): Promise<RateOutcome> {
  let minute = minuteOf(window.nowMs);
  let reset = false;
  for (let attempt = 0; attempt < MAX_COUNT_ATTEMPTS; attempt++) {
    const parts = rateParts(minute, window.limit, reset);
    const input: UpdateCommandInput = {
      TableName: tableName(),
      Key: accountKeys.rate(accountId),
      UpdateExpression: `SET ${parts.set} REMOVE ${parts.remove}`,
      ConditionExpression: parts.condition,
      ExpressionAttributeNames: parts.names,
      ExpressionAttributeValues: parts.values,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      // The whole item (a few numbers): the count, and the configuration's and rules' versions beside it, for free.
      ReturnValues: 'ALL_NEW',
    };
    try {
      const { Attributes = {} } = await rateExempt(() => dynamo.send(new UpdateCommand(input)));
      const count = Attributes[parts.names['#rcur'] as string];
      return outcomeOf(minute, window.limit, count, true, Attributes);
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const item = itemOnConditionFailure(error) ?? {};
      const slot = item[parts.names['#rcur'] as string];
      const held = heldMinute(slot);
      const newest = Math.max(held ?? minute, heldMinute(item[parts.names['#rother'] as string]) ?? minute);
      // A newer minute has begun: count in it (its slot holds it). This minute's count at the limit: refused.
      // An older minute's: reset it. Absent, or this minute's below the limit (another request reset it, or
      // moved it, first): count again.
      if (newest > minute) {
        minute = newest;
        reset = false;
        continue;
      }
      if (held === minute && Number(slot) >= minute * MINUTE_SHIFT + window.limit) {
        throw new RateLimited(outcomeOf(minute, window.limit, 0, false));
      }
      reset = held !== undefined && held < minute;
    }
  }
  // The slots moved under every attempt (requests of two minutes racing at the turn): try again in a second,
  // never a 429 the count did not decide.
  throw new ServiceUnavailable(1);
}

/** Counts a request: its outcome, allowed or refused (a failure to write the count rejects). */
export async function consumeRate(accountId: string, window: RateWindow): Promise<RateOutcome> {
  try {
    return await countRequest(accountId, window);
  } catch (error) {
    if (error instanceof RateLimited) return error.outcome;
    throw error;
  }
}

/**
 * The request's rate decision, as the data layer needs it (held in the request scope, lib/request-scope.ts,
 * by lib/http/rate-limit.ts): every write of the request waits for it, so a refused request writes nothing.
 */
export interface RateScope extends RateCount {
  window: RateWindow;
  /** The count, running beside the request's first round trip. */
  eager: Promise<RateOutcome>;
}

/** The rate count of the request being served, if the HTTP stack opened one. */
export function requestRate(): RateScope | undefined {
  // The scope types its rate by what it needs to hold it; the only one ever put there is a RateScope (openRateScope).
  return requestScope()?.rate as RateScope | undefined;
}

/** A write that is itself the rate decision (or must not wait for it: the Idempotency-Key claim). */
export function rateExempt<T>(work: () => Promise<T>): Promise<T> {
  return inExemptScope(work);
}

const WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);

// Every write waits for the request's rate decision: over the limit, it throws RateLimited and writes nothing.
dynamo.middlewareStack.add(
  (next, context) => async (args) => {
    const rate = requestRate();
    if (rate && !requestScope()?.rateExempt && WRITES.has(String(context.commandName))) {
      const outcome = await rate.eager;
      if (!outcome.allowed) throw new RateLimited(outcome);
    }
    return next(args);
  },
  { step: 'initialize', name: 'rateGate', priority: 'normal' },
);
