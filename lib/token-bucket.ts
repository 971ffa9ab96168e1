import { nowMillis, sleep } from './time.ts';

/**
 * A token bucket's tokens at `nowMs`, from `tokens` held at `atMs`: `ratePerSecond` gained a second, at most
 * `burst`; no time runs backwards. The one refill of every bucket here (TokenBucket; the local gateway's edge
 * throttle, infra/local/edge-throttle.ts).
 */
export function refilled(
  bucket: { tokens: number; at: number },
  nowMs: number,
  ratePerSecond: number,
  burst: number,
): { tokens: number; at: number } {
  if (nowMs <= bucket.at) return bucket;
  return {
    tokens: Math.min(burst, bucket.tokens + ((nowMs - bucket.at) * ratePerSecond) / 1000),
    at: nowMs,
  };
}

/**
 * A token bucket on the service's clock (lib/time.ts): at most `ratePerSecond` takes a second on average, and up
 * to `burst` at once after a quiet while. The outbox paces its sends with one to the provider's sending quota
 * (SES's per-second rate: docs/email.md, "Pace and fair shares"), so a backlog is sent as fast as the quota allows
 * and no faster, instead of sends beyond it coming back throttled.
 */
export class TokenBucket {
  #tokens: number;
  #at: number;

  constructor(
    readonly ratePerSecond: number,
    readonly burst = Math.max(1, Math.ceil(ratePerSecond)),
  ) {
    if (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond))
      throw new Error(`a token bucket's rate must be a positive number, got ${ratePerSecond}`);
    this.#tokens = burst;
    this.#at = nowMillis();
  }

  /**
   * Waits (on the service's clock) until a token is there, and takes it; false, at once, when none would be there
   * by `until` (epoch ms: the caller's run ends first).
   */
  async take(until = Number.POSITIVE_INFINITY): Promise<boolean> {
    for (;;) {
      const now = nowMillis();
      this.#refill(now);
      if (this.#tokens >= 1) {
        this.#tokens -= 1;
        return true;
      }
      const wait = Math.max(1, Math.ceil(((1 - this.#tokens) * 1000) / this.ratePerSecond));
      if (now + wait > until) return false;
      await sleep(wait);
    }
  }

  /** Empties the bucket: no burst right after (the provider said the rate was passed). */
  drain(): void {
    this.#refill(nowMillis());
    this.#tokens = Math.min(this.#tokens, 0);
  }

  #refill(now: number): void {
    const bucket = refilled({ tokens: this.#tokens, at: this.#at }, now, this.ratePerSecond, this.burst);
    this.#tokens = bucket.tokens;
    this.#at = bucket.at;
  }
}
