import type { EdgeLimits } from '#lib/accounts/edge-limits.ts';
import { LruMap } from '#lib/lru.ts';
import { refilled } from '#lib/token-bucket.ts';

/**
 * API Gateway's usage-plan throttle, locally (lib/accounts/edge-limits.ts): a token bucket per API key (the
 * authorizer's usageIdentifierKey, an account), full at first, holding at most `burstLimit` tokens and gaining
 * `rateLimit` a second; a request takes one or is refused. Time is the caller's (the service's clock: lib/time.ts),
 * so a test moves it instead of waiting. A bucket left alone long enough is full again, so forgetting the least
 * recently used (past 10,000 accounts) changes no answer but that of a bucket forgotten while it was draining.
 */
interface Bucket {
  tokens: number;
  at: number;
}

export class EdgeThrottle {
  readonly #buckets = new LruMap<string, Bucket>(10_000);

  /** Whether the key's request at `nowMs` passes (and takes its token). */
  take(key: string, limits: EdgeLimits, nowMs: number): boolean {
    const { tokens, at } = refilled(
      this.#buckets.get(key) ?? { tokens: limits.burstLimit, at: nowMs },
      nowMs,
      limits.rateLimit,
      limits.burstLimit,
    );
    const passes = tokens >= 1;
    this.#buckets.set(key, { tokens: passes ? tokens - 1 : tokens, at });
    return passes;
  }
}
