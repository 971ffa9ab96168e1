import { randomBytes } from 'node:crypto';
import { intEnv } from '#lib/config/env.ts';
import {
  dueEndpoints,
  duePending,
  failPending,
  leaseEndpoint,
  type PendingDelivery,
  releaseEndpoint,
  renewLease,
} from '#lib/data/webhook-deliveries.ts';
import { logError } from '#lib/log.ts';
import { every, nowMillis, sleep } from '#lib/time.ts';
import {
  type Answer,
  type AttemptResult,
  attemptTimeoutMs,
  deliverOnce,
  HeldEndpoint,
  LEASE_MARGIN_MS,
} from './deliver.ts';
import { Slots } from './slots.ts';

/**
 * The due runner (docs/webhooks.md, "Why a due index"): finds the endpoints with deliveries due (the due index),
 * leases each, and runs its due deliveries, at most `perEndpoint` at once. Every endpoint is worked by its own
 * loop: nothing waits for another endpoint's attempts, so a receiver that hangs holds only its own slots (and at
 * most `perAccount` of the runner's `global` ones across its account's endpoints). The deployed due function runs
 * it for most of a minute (functions/webhooks-due.ts); `npm start` runs it for as long as it runs.
 */
export interface DueRunnerOptions {
  /** Attempts of one endpoint at once (WEBHOOK_CONCURRENCY_PER_ENDPOINT, default 4). */
  perEndpoint?: number;
  /** Attempts of one account's endpoints at once (default 16). */
  perAccount?: number;
  /** Attempts at once in this runner (default 64). */
  global?: number;
  /**
   * Attempts at once of one account's endpoints in the slow lane (default 4): an endpoint whose attempt timed out
   * runs one attempt at a time for SLOW_LANE_MS (until an answer comes in time), and all of an account's such
   * endpoints share this many slots, so hanging receivers hold little of the runner whatever their number.
   */
  slowPerAccount?: number;
  /**
   * The due shards this runner reads (the worker pool: each runner its own, lib/data/webhooks/due-shards.ts shardsOfRunner);
   * all by default.
   */
  shards?: readonly number[];
  /** Told of each endpoint this runner leased (tests, logs). */
  onLease?: ((accountId: string, endpointId: string) => void) | undefined;
  /** Endpoints held at once (default 64). */
  maxEndpoints?: number;
  /** How long a leased endpoint's loop waits before looking for new due deliveries while attempts run (ms). */
  pollMs?: number;
  /** What is done with an error the runner goes on after (the store unreachable for a while); logged by default. */
  onError?: ((error: unknown) => void) | undefined;
}

/** How long an endpoint stays in the slow lane after an attempt of it timed out (unless one answers in time). */
export const SLOW_LANE_MS = 60_000;

/** Whether an answer puts its endpoint in the slow lane: no answer within the attempt limit. */
export const isSlowAnswer = (answer: Answer) => answer.status === null && answer.error === 'timeout';

export class DueRunner {
  /** This runner's name in leases and claims. */
  readonly owner = `runner-${randomBytes(6).toString('hex')}`;
  private readonly perEndpoint: number;
  private readonly maxEndpoints: number;
  private readonly pollMs: number;
  private readonly onError: (error: unknown) => void;
  private readonly slots: Slots;
  private readonly shards: readonly number[] | undefined;
  private readonly onLease: ((accountId: string, endpointId: string) => void) | undefined;
  /** Endpoints in the slow lane, by `<account>#<endpoint>`, until when (ms); dropped once passed. */
  private readonly slow = new Map<string, number>();
  /** The loops of the endpoints held, by `<account>#<endpoint>`. */
  private readonly held = new Map<string, Promise<void>>();
  private stopping = false;
  /** Aborted by stop(): the runner's waits end at once. */
  private readonly stopped = new AbortController();
  /** What this runner did: endpoints leased, and attempts by outcome. */
  readonly counts: Record<'endpoints' | AttemptResult, number> = {
    endpoints: 0,
    succeeded: 0,
    retrying: 0,
    failed: 0,
    skipped: 0,
  };

  constructor(options: DueRunnerOptions = {}) {
    this.perEndpoint = options.perEndpoint ?? intEnv('WEBHOOK_CONCURRENCY_PER_ENDPOINT', 4);
    this.maxEndpoints = options.maxEndpoints ?? 64;
    this.pollMs = options.pollMs ?? 250;
    this.onError = options.onError ?? logError;
    this.slots = new Slots(options.global ?? 64, options.perAccount ?? 16, options.slowPerAccount ?? 4);
    this.shards = options.shards;
    this.onLease = options.onLease;
  }

  /** How long a lease lasts: an attempt and its record, with room; renewed every third of it. */
  private leaseMs = () => attemptTimeoutMs() + LEASE_MARGIN_MS;

  /**
   * One look at the due index: every due endpoint not held yet is leased and its loop started (not awaited).
   * Answers how many were started.
   */
  async poll(): Promise<number> {
    if (this.stopping) return 0;
    const room = this.maxEndpoints - this.held.size;
    if (room <= 0) return 0;
    const now = nowMillis();
    for (const [key, until] of this.slow) if (until <= now) this.slow.delete(key);
    const due = await dueEndpoints(now, this.maxEndpoints * 2, this.shards);
    let started = 0;
    for (const entry of due) {
      const key = `${entry.accountId}#${entry.endpointId}`;
      if (this.held.has(key)) continue;
      if (this.held.size >= this.maxEndpoints) break;
      const loop = this.work(entry.accountId, entry.endpointId)
        .catch(this.onError)
        .finally(() => this.held.delete(key));
      this.held.set(key, loop);
      started++;
    }
    return started;
  }

  /** Polls every `pollMs` until `deadline` (epoch ms) or stop(); then stops and waits for the endpoints' loops. */
  async runUntil(deadline: number): Promise<void> {
    while (!this.stopping && nowMillis() < deadline) {
      try {
        await this.poll();
      } catch (error) {
        // The store unreachable for a moment (a restart, a stall): the next poll tries again.
        this.onError(error);
      }
      await sleep(Math.min(this.pollMs, Math.max(0, deadline - nowMillis())), this.stopped.signal);
    }
    await this.stop();
  }

  /** Starts no attempt from now on; waits for those running to be recorded and the leases released. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    this.slots.close();
    await Promise.all(this.held.values());
  }

  /** Attempt slots the account holds now (tests, logs). */
  slotsOf(accountId: string): number {
    return this.slots.inUse(accountId);
  }

  /** Whether the endpoint is in this runner's slow lane now. */
  isSlow(accountId: string, endpointId: string): boolean {
    return (this.slow.get(`${accountId}#${endpointId}`) ?? 0) > nowMillis();
  }

  /** Endpoints held now (tests, logs). */
  get holding(): number {
    return this.held.size;
  }

  /** One endpoint's loop, from its lease to its release. */
  private async work(accountId: string, endpointId: string): Promise<void> {
    const leaseMs = this.leaseMs();
    const leased = await leaseEndpoint(accountId, endpointId, this.owner, leaseMs);
    if (!leased) return;
    this.counts.endpoints++;
    this.onLease?.(accountId, endpointId);
    const held = new HeldEndpoint(accountId, endpointId, this.owner, leased);
    let lost = false;
    const renewing = new AbortController();
    every(leaseMs / 3, renewing.signal, () => {
      renewLease(accountId, endpointId, this.owner, leaseMs)
        .then((renewed) => {
          if (renewed) held.refresh(renewed);
          else lost = true;
        })
        .catch(this.onError);
    });
    const running = new Map<string, Promise<void>>();
    try {
      while (!this.stopping && !lost) {
        // The slow lane: one attempt at a time while the endpoint's attempts time out.
        const slow = this.isSlow(accountId, endpointId);
        const limit = slow ? 1 : this.perEndpoint;
        const room = limit - running.size;
        if (room > 0) {
          // Each delivery once at a time (claimDelivery takes this runner's own live claim again).
          const due = (await duePending(accountId, endpointId, nowMillis(), this.perEndpoint + running.size))
            .filter(
              (p, i, all) => !running.has(p.eventId) && all.findIndex((q) => q.eventId === p.eventId) === i,
            )
            .slice(0, room);
          if (due.length === 0 && running.size === 0) break;
          if (!held.endpoint.enabled) {
            // Disabled (410, 5 days of failures, or by its owner): what is still pending ends here, unattempted.
            await Promise.all(due.map((p) => failPending(accountId, endpointId, p, 'endpoint_disabled')));
            if (running.size === 0) continue;
          } else {
            for (const pending of due) {
              if (!(await this.slots.acquire(accountId, slow))) break;
              running.set(pending.eventId, this.attempt(held, pending, running, slow));
            }
          }
        }
        // Until one attempt ends (a slot frees) or, with room left, new deliveries may have come due.
        const waiting = new AbortController();
        await Promise.race([
          ...running.values(),
          ...(running.size < limit ? [sleep(this.pollMs, waiting.signal)] : []),
        ]);
        waiting.abort();
      }
      await Promise.all(running.values());
    } finally {
      renewing.abort();
      await releaseEndpoint(accountId, endpointId, this.owner);
    }
  }

  private async attempt(
    held: HeldEndpoint,
    pending: PendingDelivery,
    running: Map<string, Promise<void>>,
    slow: boolean,
  ) {
    const key = `${held.accountId}#${held.endpointId}`;
    const onAnswer = (answer: Answer) => {
      if (isSlowAnswer(answer)) this.slow.set(key, nowMillis() + SLOW_LANE_MS);
      else if (answer.status !== null) this.slow.delete(key);
    };
    try {
      this.counts[await deliverOnce(held, pending, onAnswer)]++;
    } catch (error) {
      // The store failed the claim or the record: the delivery stays pending, and comes due again.
      this.onError(error);
    } finally {
      running.delete(pending.eventId);
      this.slots.release(held.accountId, slow);
    }
  }
}
