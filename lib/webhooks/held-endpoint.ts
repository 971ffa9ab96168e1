import {
  type AttemptRecord,
  ClaimLost,
  type EndpointOutcome,
  type LeasedEndpoint,
  markOutcome,
  markSlow,
  recordAttempt,
} from '#lib/data/webhook-deliveries.ts';
import { getEndpoint } from '#lib/data/webhooks/webhooks.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import type { Answer } from './post.ts';
import type { Endpoint } from './types.ts';

/**
 * Recording an attempt's outcome for the runner that leases the endpoint (docs/webhooks.md, "At least once"): the
 * record, writes the store failed made again within the claim, and what the outcome changes of the endpoint item
 * (its marks, the slow lane), written only when it changes what the item says.
 */

/** How long a recorded success may be before `lastSuccessAt` is written again (it is not written for every one). */
export const SUCCESS_MARK_MS = 1_000;
/** How long an endpoint stays in the slow lane after an attempt of it timed out (unless one answers in time). */
export const SLOW_LANE_MS = 60_000;

/** Whether an answer puts its endpoint in the slow lane: no answer within the attempt limit. */
export const isSlowAnswer = (answer: Answer) => answer.status === null && answer.error === 'timeout';

/**
 * An endpoint held by a runner's lease: its latest known state (marks and slow lane included), read again before
 * each attempt (one read shared by the attempts that asked for it meanwhile), and its attempts' records, which go out
 * concurrently (nothing of the endpoint item is in them).
 */
export class HeldEndpoint {
  endpoint: Endpoint;
  /** Until when the endpoint is in the slow lane (epoch ms), as last read or written; null: not in it. */
  slowUntil: number | null;
  /** The endpoint's read under way, and whether attempts asked for one after it started (they take the next). */
  private reading: Promise<void> | undefined;
  private next: Promise<void> | undefined;

  constructor(
    readonly accountId: string,
    readonly endpointId: string,
    readonly owner: string,
    leased: LeasedEndpoint,
  ) {
    this.endpoint = leased.endpoint;
    this.slowUntil = leased.slowUntil;
  }

  /** The endpoint as a lease renewal read it (a management write, or another runner's marks, may have changed it). */
  refresh(leased: LeasedEndpoint): void {
    this.endpoint = leased.endpoint;
    this.slowUntil = leased.slowUntil;
  }

  /** Whether the endpoint is in the slow lane now. */
  get slow(): boolean {
    return (this.slowUntil ?? 0) > nowMillis();
  }

  /**
   * The endpoint read again, by a read that started after this call (its owner may have disabled it, moved it or
   * deleted it since: a PATCH or DELETE answered before the call has effect): attempts that ask while a read is
   * under way share the next one, so an endpoint's concurrent attempts make about one read at a time between them.
   * Deleted: what is still pending of it then ends as for a disabled one.
   */
  reread(): Promise<void> {
    if (!this.reading) {
      this.reading = this.readNow().finally(() => {
        this.reading = undefined;
      });
      return this.reading;
    }
    this.next ??= this.reading
      .catch(() => {})
      .then(() => {
        this.next = undefined;
        return this.reread();
      });
    return this.next;
  }

  private async readNow(): Promise<void> {
    const read = await getEndpoint(this.accountId, this.endpointId);
    this.endpoint = read?.entity ?? { ...this.endpoint, enabled: false };
  }

  /**
   * Records an attempt, then what it changes of the endpoint's marks: false when there was nothing to record it in
   * (the claim lost). A write the store failed (unreachable, stalled, its answer lost) is made again until `until`,
   * the claim's end: what the receiver answered (a success, a 429's Retry-After) is kept, and the delivery, still
   * claimed meanwhile, is not attempted again early. Past the claim's end it is left pending, attempted again (same
   * webhook-id).
   */
  async record(record: HeldRecord, outcome: EndpointOutcome, until: number): Promise<boolean> {
    const full = { ...record, accountId: this.accountId, endpointId: this.endpointId, owner: this.owner };
    try {
      await this.again(() => recordAttempt(full), until);
    } catch (error) {
      if (error instanceof ClaimLost) return false;
      throw error;
    }
    const at = record.attempt.at;
    if (this.marks(outcome, at))
      await this.again(() => markOutcome(this.accountId, this.endpointId, outcome, at), until);
    return true;
  }

  /**
   * The slow lane after an answer: a timeout puts the endpoint in it for SLOW_LANE_MS (written when less than half
   * of that is left of it, so a hanging endpoint's item is written about once a half-minute), an answer in time (a
   * status) takes it out (written when it was in); a refused connection changes neither.
   */
  async answered(answer: Answer): Promise<void> {
    const now = nowMillis();
    if (isSlowAnswer(answer)) {
      if ((this.slowUntil ?? 0) - now > SLOW_LANE_MS / 2) return;
      this.slowUntil = now + SLOW_LANE_MS;
      await markSlow(this.accountId, this.endpointId, this.slowUntil);
    } else if (answer.status !== null && this.slowUntil !== null) {
      this.slowUntil = null;
      await markSlow(this.accountId, this.endpointId, null);
    }
  }

  /**
   * Whether the outcome's marks change what the endpoint says (as this holder knows it): then they are taken as its
   * own view, and written.
   */
  private marks(outcome: EndpointOutcome, at: number): boolean {
    const e = this.endpoint;
    if (outcome.kind === 'success') {
      if (e.failingSince === null && (e.lastSuccessAt ?? 0) >= at - SUCCESS_MARK_MS) return false;
      // A spell a later-started attempt began stands (markOutcome's condition says the same to the store).
      if (e.failingSince !== null && e.failingSince > at) return false;
      this.endpoint = { ...e, lastSuccessAt: Math.max(at, e.lastSuccessAt ?? 0), failingSince: null };
    } else if (outcome.kind === 'failure') {
      if (e.failingSince !== null || (e.lastSuccessAt ?? 0) > at) return false;
      this.endpoint = { ...e, failingSince: at };
    } else {
      this.endpoint = {
        ...e,
        enabled: false,
        disabledReason: outcome.reason,
        failingSince: e.failingSince ?? at,
      };
    }
    return true;
  }

  /** `write`, made again after a failure of the store (backing off) until `until`; ClaimLost is not retried. */
  private async again(write: () => Promise<unknown>, until: number): Promise<void> {
    for (let failures = 0; ; ) {
      try {
        await write();
        return;
      } catch (error) {
        // A write that landed although its answer was lost is refused when made again (ClaimLost: the claim ended).
        if (error instanceof ClaimLost) throw error;
        const backoff = Math.min(1000, 100 * 2 ** failures++);
        if (nowMillis() + backoff >= until) throw error;
        // On the clock of `until`: the claim's end and the waits before it are one time.
        await sleep(backoff);
      }
    }
  }
}

/** What an attempt's record says; the holder adds the endpoint and the owner. */
type HeldRecord = Omit<AttemptRecord, 'accountId' | 'endpointId' | 'owner'>;
