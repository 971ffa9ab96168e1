import { unmarshall } from '@aws-sdk/util-dynamodb';
import { ServiceUnavailable } from '#lib/errors.ts';
import { timeLeftMs } from '#lib/request-scope.ts';

/**
 * The one place that reads DynamoDB's errors. The rest of the data layer asks these questions; nothing above
 * the data layer sees a DynamoDB error name.
 */
interface DynamoError {
  name?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
  CancellationReasons?: { Code?: string; Item?: Record<string, unknown> }[];
  Item?: Record<string, unknown>;
}

const asDynamo = (error: unknown): DynamoError => (typeof error === 'object' && error ? error : {});

/** The reason code of each action of a cancelled transaction, in order (empty for any other error). */
export function cancellationCodes(error: unknown): string[] {
  const e = asDynamo(error);
  if (e.name !== 'TransactionCanceledException') return [];
  return (e.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
}

/** A single-item write or a transaction failed because a condition did not hold. */
export function isConditionFailure(error: unknown): boolean {
  return (
    asDynamo(error).name === 'ConditionalCheckFailedException' ||
    cancellationCodes(error).includes('ConditionalCheckFailed')
  );
}

/** The positions of a cancelled transaction's actions whose condition failed (each maps back to its action). */
export function failedConditionsOf(error: unknown): number[] {
  return cancellationCodes(error).flatMap((code, i) => (code === 'ConditionalCheckFailed' ? [i] : []));
}

/**
 * The item as it was when a condition failed (requested with ReturnValuesOnConditionCheckFailure: ALL_OLD):
 * of a single write, or of action `index` of a transaction.
 */
export function itemOnConditionFailure(error: unknown, index = 0): Record<string, unknown> | undefined {
  const e = asDynamo(error);
  const raw = e.name === 'TransactionCanceledException' ? e.CancellationReasons?.[index]?.Item : e.Item;
  return raw ? unmarshall(raw as never) : undefined;
}

/** A transaction DynamoDB cancelled, as thrown or as the cause of what it became: it surely wrote nothing. */
export function isTransactionCanceled(error: unknown): boolean {
  for (let e = error; e; e = (e as { cause?: unknown }).cause) {
    if (asDynamo(e).name === 'TransactionCanceledException') return true;
  }
  return false;
}

/** A transaction cancelled because a concurrent one touched the same item: safe to decide again and retry. */
export function isTransactionConflict(error: unknown): boolean {
  return (
    asDynamo(error).name === 'TransactionConflictException' ||
    cancellationCodes(error).includes('TransactionConflict')
  );
}

const UNAVAILABLE_NAMES = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'TransactionInProgressException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'AbortError',
]);
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
]);
/** Cancellation reasons that say "later": throttled, or still conflicting once retries are spent. */
const UNAVAILABLE_CODES = new Set([
  'ThrottlingError',
  'TransactionConflict',
  'ProvisionedThroughputExceeded',
]);

/**
 * The store could not be reached, timed out, throttled us or failed on its side (after the SDK's own retries):
 * the request may succeed later. Whether a write landed is unknown; the Idempotency-Key tells the client.
 */
export function isStoreUnavailable(error: unknown): boolean {
  const e = asDynamo(error);
  if (e.name && UNAVAILABLE_NAMES.has(e.name)) return true;
  if (e.code && NETWORK_CODES.has(e.code)) return true;
  if (cancellationCodes(error).some((c) => UNAVAILABLE_CODES.has(c))) return true;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error && isStoreUnavailable(cause);
}

/**
 * The store refused the request as invalid (ValidationException, or a transaction's ValidationError): an item over
 * 400 KB, a key over its limit. The same request never succeeds, however often it is tried again.
 */
export function isRefusedAsInvalid(error: unknown): boolean {
  return (
    asDynamo(error).name === 'ValidationException' || cancellationCodes(error).includes('ValidationError')
  );
}

/**
 * Signals of the data layer to the domain (not HTTP errors: the domain decides what each means for the client).
 */

/**
 * A write lost to a concurrent one: a transaction conflict, or a condition on a shared item (the least-busy
 * choice) no longer holding. Nothing was written; the caller may decide again and retry.
 */
export class ConcurrentWrite extends Error {
  constructor(options?: ErrorOptions) {
    super('A concurrent write changed what this write depended on', options);
  }
}

/**
 * A request the store refused as invalid (isRefusedAsInvalid): nothing was written, and trying it again changes
 * nothing. The domain says what it means (a received mail that can never be stored is logged `rejected`).
 */
export class StoreRefused extends Error {
  constructor(options?: ErrorOptions) {
    const cause = options?.cause;
    super(
      `The store refused the write: ${cause instanceof Error ? cause.message : 'invalid request'}`,
      options,
    );
  }
}

/** The entity changed since it was read (another update landed first): nothing was written. */
export class StaleVersion extends Error {
  constructor() {
    super('The entity changed since it was read');
  }
}

/**
 * A write another one raced and won (the entity changed since it was read, or a concurrent write changed what this
 * one depended on): nothing was written, and deciding again from what the store now holds may succeed.
 */
export const lostToRace = (error: unknown): boolean =>
  error instanceof StaleVersion || error instanceof ConcurrentWrite;

/** An update whose removals and counter moves alone pass one transaction's 100 actions. */
export class UpdateTooLarge extends Error {
  constructor() {
    super('The update changes more index entries than one transaction holds');
  }
}

/**
 * A list that would read more index keys than its budget (lib/data/index/list.ts, listReadBudget), refused
 * before reading past it: `parameter` is what made it too large, a search word that matches too many, a page
 * too deep, or filters that together (none narrow enough to drive) would have their keys read past it.
 */
export class ReadBudgetExceeded extends Error {
  constructor(readonly parameter: 'search' | 'page' | 'filters') {
    super(`The list would read more index keys than its budget allows (${parameter})`);
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * How often a write that lost to a concurrent one is decided again, at most, outside a request (a runner); within
 * one, its deadline ends the tries.
 */
export const MAX_CONFLICT_ATTEMPTS = 64;
/** The first backoff window after a conflict; it doubles with each conflict up to CONFLICT_BACKOFF_CAP_MS. */
const CONFLICT_BACKOFF_BASE_MS = 8;
/**
 * The widest window: several times a transaction's hold (~20 ms on DynamoDB; a round trip to a loaded DynamoDB
 * Local in the contention bench), so that the writers that lost on one hot item spread their next tries over it.
 */
const CONFLICT_BACKOFF_CAP_MS = 256;

/** The narrowest window a request's change that keeps losing comes back to (`narrowing`, below). */
const CONFLICT_BACKOFF_FLOOR_MS = 32;
/** The first attempt whose window is the widest (the 6th: 8 · 2⁵ = 256). */
const WIDEST_ATTEMPT = Math.log2(CONFLICT_BACKOFF_CAP_MS / CONFLICT_BACKOFF_BASE_MS) + 1;

/**
 * The pause after the `attempt`th conflict in a row: full jitter, anywhere in a window that doubles (8, 16 … 256
 * ms). Writers that lost together do not try again together, and a hot item's losers come back at the rate it
 * serves them rather than in a burst that cancels most of them again (each cancelled attempt re-reads and takes
 * event places for nothing).
 *
 * `narrowing` (a request's change, bounded by its deadline): past the widest window it narrows again, by halves
 * down to 32 ms (… 256, 128, 64, 32, 32 …). With windows that only widen, the next to try once a hot item is free
 * is most often a writer that lost once or twice (the narrowest windows), and a change that lost many times loses
 * to each newer one until its deadline: the contention bench's last 503s, changes cancelled 53–65 times in 8.5 s
 * (docs/capacity.md, "Contention, measured"). Narrowing, the changes that have waited longest come back most often.
 */
export function conflictBackoffMs(attempt: number, narrowing = false): number {
  const pastWidest = attempt - WIDEST_ATTEMPT;
  const window =
    narrowing && pastWidest > 0
      ? Math.max(CONFLICT_BACKOFF_FLOOR_MS, CONFLICT_BACKOFF_CAP_MS / 2 ** pastWidest)
      : Math.min(CONFLICT_BACKOFF_CAP_MS, CONFLICT_BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return Math.random() * window;
}

/**
 * Runs `attempt` until it does not throw a retryable error (by default: a transaction conflict), pausing
 * conflictBackoffMs between tries; `beforeRetry` may refresh what the next attempt decides on. Still losing
 * when the request's deadline would pass during the pause (or after MAX_CONFLICT_ATTEMPTS): 503 (the account is
 * too busy right now; nothing was written).
 */
export async function retryOnConflict<T>(
  attempt: () => Promise<T>,
  options: { retryable?: (error: unknown) => boolean; beforeRetry?: () => Promise<void> } = {},
): Promise<T> {
  const retryable = options.retryable ?? isTransactionConflict;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (!retryable(error)) throw error;
      // Within a request its deadline bounds the tries (narrowing windows, above); outside one, their number.
      const left = timeLeftMs();
      const bounded = left !== Number.POSITIVE_INFINITY;
      const backoff = conflictBackoffMs(n, bounded);
      if ((!bounded && n >= MAX_CONFLICT_ATTEMPTS) || left <= backoff)
        throw new ServiceUnavailable(1, { cause: error });
      await pause(backoff);
      await options.beforeRetry?.();
    }
  }
}
