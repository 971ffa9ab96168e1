import {
  type AttemptRecord,
  attemptCountOf,
  ClaimLost,
  type EndpointOutcome,
  type LeasedEndpoint,
  LogNumberTaken,
  recordAttempt,
} from '#lib/data/webhook-deliveries.ts';
import { EndpointNotFound } from '#lib/data/webhooks/webhooks.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import type { Endpoint } from './types.ts';

/**
 * Recording an attempt's outcome for the runner that leases the endpoint (docs/webhooks.md, "At least once"): the
 * attempts log's numbers, the endpoint's marks as recorded, and writes the store failed made again within the claim.
 */

/**
 * An endpoint held by a runner's lease: its latest known state, and its attempts log, whose numbers are taken one
 * record at a time (records of one endpoint are chained; a number taken meanwhile by another writer is read again).
 */
export class HeldEndpoint {
  endpoint: Endpoint;
  private attemptCount: number;
  private records: Promise<unknown> = Promise.resolve();

  constructor(
    readonly accountId: string,
    readonly endpointId: string,
    readonly owner: string,
    leased: LeasedEndpoint,
  ) {
    this.endpoint = leased.endpoint;
    this.attemptCount = leased.attemptCount;
  }

  /** The endpoint as a lease renewal read it (a management write may have changed it). */
  refresh(leased: LeasedEndpoint): void {
    this.endpoint = leased.endpoint;
    this.attemptCount = Math.max(this.attemptCount, leased.attemptCount);
  }

  /**
   * The endpoint as read again just before an attempt: its owner may have disabled it, moved it or deleted it since
   * the lease last read it (undefined: deleted; what is still pending of it then ends as for a disabled one).
   */
  reread(endpoint: Endpoint | undefined): void {
    this.endpoint = endpoint ?? { ...this.endpoint, enabled: false };
  }

  /**
   * Records an attempt: false when there was nothing to record it in (the claim lost, or the endpoint deleted).
   * A write the store failed (unreachable, stalled, its answer lost) is made again until `until`, the claim's end:
   * what the receiver answered (a success, a 429's Retry-After) is kept, and the delivery, still claimed meanwhile,
   * is not attempted again early. Past the claim's end it is left pending, attempted again (same webhook-id).
   */
  record(record: HeldRecord, until: number): Promise<boolean> {
    const run = this.records.then(() => this.recordNow(record, until));
    this.records = run.catch(() => {});
    return run;
  }

  private async recordNow(record: HeldRecord, until: number) {
    for (let failures = 0; ; ) {
      try {
        await recordAttempt({
          ...record,
          accountId: this.accountId,
          endpointId: this.endpointId,
          owner: this.owner,
          logNumber: this.attemptCount + 1,
          failingSince: this.endpoint.failingSince,
        });
        this.attemptCount++;
        this.applied(record.endpoint, record.attempt.at);
        return true;
      } catch (error) {
        if (error instanceof ClaimLost || error instanceof EndpointNotFound) return false;
        if (error instanceof LogNumberTaken) {
          const count = await attemptCountOf(this.accountId, this.endpointId);
          if (count === undefined) return false;
          this.attemptCount = count;
          continue;
        }
        // A write that landed although its answer was lost is refused when made again (ClaimLost: the claim ended).
        const backoff = Math.min(1000, 100 * 2 ** failures++);
        if (nowMillis() + backoff >= until) throw error;
        // On the clock of `until`: the claim's end and the waits before it are one time.
        await sleep(backoff);
      }
    }
  }

  private applied(outcome: EndpointOutcome, at: number) {
    const e = this.endpoint;
    if (outcome.kind === 'success') this.endpoint = { ...e, lastSuccessAt: at, failingSince: null };
    else this.endpoint = { ...e, failingSince: e.failingSince ?? at };
    if (outcome.kind === 'disable') {
      this.endpoint = { ...this.endpoint, enabled: false, disabledReason: outcome.reason };
    }
  }
}

/** What an attempt's record says; the holder adds the endpoint, the owner, the log number and the failure clock. */
type HeldRecord = Omit<AttemptRecord, 'logNumber' | 'accountId' | 'endpointId' | 'owner' | 'failingSince'>;
