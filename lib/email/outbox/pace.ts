import { nowMillis, sleep } from '#lib/time.ts';
import { TokenBucket } from '#lib/token-bucket.ts';

/**
 * The outbox's pace (docs/email.md, "Pace and fair shares"): sends are paced to the provider's sending quota (a
 * token bucket at EMAIL_SEND_RATE mails a second; unset, unpaced, as a local relay needs), and a throttle answer
 * (the quota is smaller than configured, or spent for the day) holds every send of the runner for a while, doubling
 * from 1 s to 60 s while throttles go on and back to none at the first mail accepted. The throttled mail is put back
 * due when the hold ends, with no attempt counted: the provider refused its rate, not the mail.
 */

export const THROTTLE_HOLD_MS = 1_000;
export const MAX_THROTTLE_HOLD_MS = 60_000;

/** EMAIL_SEND_RATE: the sending quota, mails a second (SES's per-second rate); unset or empty: unpaced. */
export function emailSendRate(): number | undefined {
  const raw = process.env.EMAIL_SEND_RATE;
  if (raw === undefined || raw.trim() === '') return undefined;
  const rate = Number(raw);
  if (!Number.isFinite(rate) || rate <= 0) {
    throw new Error(`EMAIL_SEND_RATE must be mails a second, a positive number, got "${raw}"`);
  }
  return rate;
}

export class SendPace {
  readonly #bucket: TokenBucket | undefined;
  #holdUntil = 0;
  #hold = 0;

  /** `ratePerSecond`: the sending quota; undefined: unpaced (throttles still hold). */
  constructor(readonly ratePerSecond?: number) {
    this.#bucket = ratePerSecond === undefined ? undefined : new TokenBucket(ratePerSecond);
  }

  /**
   * Waits until a send may go: past any hold, and a token of the quota; false, at once, when that would be after
   * `until` (epoch ms: the run ends first, and what it has not claimed stays due for the next).
   */
  async take(until = Number.POSITIVE_INFINITY): Promise<boolean> {
    for (let now = nowMillis(); now < this.#holdUntil; now = nowMillis()) {
      if (this.#holdUntil > until) return false;
      await sleep(this.#holdUntil - now);
    }
    return this.#bucket ? this.#bucket.take(until) : true;
  }

  /** The provider throttled a send: every send waits; answers when the hold ends (the mail is due again then). */
  throttled(): number {
    const now = nowMillis();
    // The other sends in flight when the first throttle came back are answered alike: one hold, not one each.
    if (now >= this.#holdUntil) {
      this.#hold = Math.min(MAX_THROTTLE_HOLD_MS, this.#hold === 0 ? THROTTLE_HOLD_MS : this.#hold * 2);
      this.#holdUntil = now + this.#hold;
    }
    this.#bucket?.drain();
    return this.#holdUntil;
  }

  /** The provider took a mail: a throttle seen before is over. */
  accepted(): void {
    this.#hold = 0;
  }
}
