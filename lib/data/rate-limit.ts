import { UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { dynamo, tableName } from './client.ts';
import { isConditionFailure, itemOnConditionFailure } from './errors.ts';
import { accountKeys } from './keys.ts';
import { inExemptScope, requestScope } from './request-scope.ts';

/**
 * Requests per account and fixed minute (decisions.md, "Rate limits per plan"), counted on the account's
 * sequences item: two attributes, one for even and one for odd minutes, each holding `minute × 2^20 + count`.
 * A request adds one to its minute's slot on the condition that the slot is of this minute and below the limit
 * (or absent), and removes the other slot. So one conditional UpdateItem counts exactly (N concurrent requests
 * over a limit L: exactly L pass), a refused request changes nothing, and the item never grows. The slot of
 * this minute can only hold an older minute when the account's previous request was an even number (≥ 2) of
 * minutes ago: that first request after an idle spell then resets it with a second call.
 *
 * A create folds this into the UpdateItem that takes its ticket number (foldRate), so a refused create takes
 * no number and costs no extra round trip; every other request runs it beside its first round trip.
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

/** The parts of an UpdateItem that count a request in its minute (`reset`: the slot holds an older minute). */
function rateParts(window: RateWindow, reset = false): RateParts {
  const minute = minuteOf(window.nowMs);
  const base = minute * MINUTE_SHIFT;
  return {
    set: reset ? '#rcur = :rbase1' : '#rcur = if_not_exists(#rcur, :rbase) + :rone',
    remove: '#rother',
    // Reset only a slot of another minute (an older one; or a later one: a clock that moved back).
    condition: reset
      ? '#rcur < :rbase OR #rcur >= :rnext'
      : '(attribute_not_exists(#rcur) OR (#rcur >= :rbase AND #rcur < :rcap))',
    names: { '#rcur': slotOf(minute), '#rother': slotOf(minute + 1) },
    values: reset
      ? { ':rbase': base, ':rbase1': base + 1, ':rnext': base + MINUTE_SHIFT }
      : { ':rbase': base, ':rone': 1, ':rcap': base + window.limit },
  };
}

function outcomeOf(window: RateWindow, value: unknown, allowed: boolean): RateOutcome {
  const minute = minuteOf(window.nowMs);
  return {
    allowed,
    limit: window.limit,
    count: allowed ? Number(value) - minute * MINUTE_SHIFT : window.limit,
    resetAt: (minute + 1) * 60,
  };
}

/**
 * Runs an UpdateItem on the sequences item with the rate count folded in: `extra` holds the caller's own
 * clauses (`ADD ticket :one`). Throws RateLimited (nothing written) over the limit.
 */
export async function updateWithRate(
  accountId: string,
  window: RateWindow,
  extra: { add?: string; names?: Record<string, string>; values?: Record<string, unknown> } = {},
): Promise<{ attributes: Record<string, unknown>; outcome: RateOutcome }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const reset = attempt > 0;
    const parts = rateParts(window, reset);
    const input: UpdateCommandInput = {
      TableName: tableName(),
      Key: accountKeys.sequences(accountId),
      UpdateExpression: [extra.add ? `ADD ${extra.add}` : '', `SET ${parts.set}`, `REMOVE ${parts.remove}`]
        .filter(Boolean)
        .join(' '),
      ConditionExpression: parts.condition,
      ExpressionAttributeNames: { ...extra.names, ...parts.names },
      ExpressionAttributeValues: { ...extra.values, ...parts.values },
      ReturnValues: 'UPDATED_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    };
    try {
      const { Attributes = {} } = await rateExempt(() => dynamo.send(new UpdateCommand(input)));
      return {
        attributes: Attributes,
        outcome: outcomeOf(window, Attributes[parts.names['#rcur'] as string], true),
      };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      const held = Number(itemOnConditionFailure(error)?.[parts.names['#rcur'] as string] ?? 0);
      const base = minuteOf(window.nowMs) * MINUTE_SHIFT;
      // This minute's count is at the limit: refused. Otherwise the slot held another minute (reset it next), or
      // another request reset it first (count again).
      const thisMinute = held >= base && held < base + MINUTE_SHIFT;
      if (thisMinute && !reset) throw new RateLimited(outcomeOf(window, 0, false));
    }
  }
  throw new RateLimited(outcomeOf(window, 0, false));
}

/**
 * Runs an UpdateItem of the sequences item (`extra`: its ADD clause) with the request's rate count folded in,
 * when the request's count is to be folded (a create without Idempotency-Key); otherwise `plain`. Records the
 * outcome for the HTTP layer; over the limit, throws RateLimited and nothing is written.
 */
export async function foldRate(
  accountId: string,
  extra: { add: string; names?: Record<string, string> | undefined; values: Record<string, unknown> },
  plain: () => Promise<Record<string, unknown>>,
): Promise<Record<string, unknown>> {
  const rate = requestScope()?.rate;
  if (!rate || rate.eager || rate.folded) return plain();
  try {
    const { attributes, outcome } = await updateWithRate(accountId, rate.window, {
      add: extra.add,
      ...(extra.names ? { names: extra.names } : {}),
      values: extra.values,
    });
    rate.folded = outcome;
    return attributes;
  } catch (error) {
    if (error instanceof RateLimited) rate.folded = error.outcome;
    throw error;
  }
}

/** Counts a request that makes no write of its own to fold the count into. */
export async function consumeRate(accountId: string, window: RateWindow): Promise<RateOutcome> {
  try {
    return (await updateWithRate(accountId, window)).outcome;
  } catch (error) {
    if (error instanceof RateLimited) return error.outcome;
    throw error;
  }
}

/**
 * The request's rate decision, as the data layer needs it (held in the request scope, lib/data/request-scope.ts,
 * by lib/http/rate-limit.ts): every write of the request waits for it (a refused request writes nothing), and a
 * create folds its count into its number's UpdateItem instead.
 */
export interface RateScope {
  window: RateWindow;
  /** Set when the count runs beside the request's first round trip. */
  eager?: Promise<RateOutcome>;
  /** Set once the count was folded into a write (a create's number). */
  folded?: RateOutcome;
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
    const scope = requestScope();
    const rate = scope?.rate;
    if (rate?.eager && !scope?.rateExempt && WRITES.has(String(context.commandName))) {
      const outcome = await rate.eager;
      if (!outcome.allowed) throw new RateLimited(outcome);
    }
    return next(args);
  },
  { step: 'initialize', name: 'rateGate', priority: 'normal' },
);
