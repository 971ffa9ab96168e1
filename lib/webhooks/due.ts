import { randomBytes } from 'node:crypto';
import { intEnv } from '#lib/config/env.ts';
import {
  dueEndpoints,
  duePending,
  failPending,
  LOG_LANES,
  leaseEndpoint,
  type PendingDelivery,
  releaseEndpoint,
  renewLease,
  trimAttempts,
} from '#lib/data/webhook-deliveries.ts';
import { logError } from '#lib/log.ts';
import { every, nowMillis, sleep } from '#lib/time.ts';
import {
  type Answer,
  type AttemptResult,
  attemptTimeoutMs,
  deliverOnce,
  HeldEndpoint,
  isSlowAnswer,
  LEASE_MARGIN_MS,
} from './deliver.ts';
import { type DueRunnerOptions, INITIAL_WINDOW } from './due-options.ts';
import { Slots } from './slots.ts';

export type { DueRunnerOptions } from './due-options.ts';

/**
 * The due runner (docs/webhooks.md, "Why a due index", "The runners"): finds the endpoints with deliveries due (the
 * due index), leases each, and runs its due deliveries, up to its window at once. Every endpoint is worked by its
 * own loop: nothing waits for another endpoint's attempts, so a receiver that hangs holds only its own slots (and at
 * most `perAccount` of the runner's `global` ones across its account's endpoints). The deployed due function runs
 * it for most of a minute (functions/webhooks-due.ts); `npm start` runs it for as long as it runs.
 */
export class DueRunner {
  /** This runner's name in leases and claims. */
  readonly owner = `runner-${randomBytes(6).toString('hex')}`;
  private readonly perEndpoint: number;
  private readonly maxEndpoints: number;
  private readonly pollMs: number;
  private readonly onError: (error: unknown) => void;
  private readonly slots: Slots;
  /**
   * Slow-lane endpoints held, at most their slots: one more is let go at once, its lease left to lapse (its due entry
   * at the lease's end, ~13 s on), so hanging endpoints never take the places (`maxEndpoints`) of healthy ones.
   */
  private readonly slowHeldMax: number;
  private slowHeld = 0;
  private readonly shards: readonly number[] | undefined;
  private readonly onLease: ((accountId: string, endpointId: string) => void) | undefined;
  /** The loops of the endpoints held, by `<account>#<endpoint>`, and the endpoints once leased. */
  private readonly held = new Map<string, Promise<void>>();
  private readonly leased = new Map<string, HeldEndpoint>();
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
    this.perEndpoint = Math.min(
      LOG_LANES,
      options.perEndpoint ?? intEnv('WEBHOOK_CONCURRENCY_PER_ENDPOINT', 48),
    );
    this.maxEndpoints = options.maxEndpoints ?? 64;
    this.pollMs = options.pollMs ?? 250;
    this.onError = options.onError ?? logError;
    const global = options.global ?? 128;
    this.slowHeldMax = options.slowGlobal ?? Math.max(1, Math.floor(global / 8));
    this.slots = new Slots(global, options.perAccount ?? 48, options.slowPerAccount ?? 4, this.slowHeldMax);
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
    const due = await dueEndpoints(nowMillis(), this.maxEndpoints * 2, this.shards);
    let started = 0;
    for (const entry of due) {
      const key = `${entry.accountId}#${entry.endpointId}`;
      if (this.held.has(key)) continue;
      if (this.held.size >= this.maxEndpoints) break;
      const loop = this.work(entry.accountId, entry.endpointId)
        .catch(this.onError)
        .finally(() => {
          this.held.delete(key);
          this.leased.delete(key);
        });
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

  /** Whether the endpoint, held by this runner, is in the slow lane now. */
  isSlow(accountId: string, endpointId: string): boolean {
    return this.leased.get(`${accountId}#${endpointId}`)?.slow ?? false;
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
    const held = new HeldEndpoint(accountId, endpointId, this.owner, leased);
    const slowAtLease = held.slow;
    if (slowAtLease && this.slowHeld >= this.slowHeldMax) return;
    if (slowAtLease) this.slowHeld++;
    this.counts.endpoints++;
    this.onLease?.(accountId, endpointId);
    this.leased.set(`${accountId}#${endpointId}`, held);
    let lost = false;
    const renewing = new AbortController();
    // The log kept to its newest ATTEMPTS_KEPT by its lease holder: at the lease, and at each renewal.
    const trim = () => void trimAttempts(accountId, endpointId).catch(this.onError);
    trim();
    every(leaseMs / 3, renewing.signal, () => {
      renewLease(accountId, endpointId, this.owner, leaseMs)
        .then((renewed) => {
          if (renewed) held.refresh(renewed);
          else lost = true;
        })
        .catch(this.onError);
      trim();
    });
    const running = new Map<string, Promise<void>>();
    /** The log's count lanes free in this loop: one attempt at a time on each (attempts.ts, LOG_LANES). */
    const lanes = Array.from({ length: this.perEndpoint }, (_, lane) => this.perEndpoint - 1 - lane);
    const window = { size: INITIAL_WINDOW };
    let ahead: PendingDelivery[] = [];
    const onAnswer = (answer: Answer) => {
      if (isSlowAnswer(answer)) window.size = 1;
      else if (answer.status !== null) window.size = Math.min(this.perEndpoint, window.size + 1);
    };
    try {
      while (!this.stopping && !lost) {
        // The slow lane: one attempt at a time while the endpoint's attempts time out.
        const slow = held.slow;
        const limit = slow ? 1 : Math.min(window.size, this.perEndpoint);
        const room = limit - running.size;
        if (room > 0) {
          // Due deliveries read ahead, a window's worth more than the room: an attempt that ends is followed at
          // once, and the pending partition is read about once a window, not at each attempt's end.
          if (ahead.length < room) {
            ahead = (await duePending(accountId, endpointId, nowMillis(), 2 * limit + running.size)).filter(
              (p, i, all) => !running.has(p.eventId) && all.findIndex((q) => q.eventId === p.eventId) === i,
            );
          }
          // Each delivery once at a time (claimDelivery takes this runner's own live claim again).
          const due = ahead.filter((p) => !running.has(p.eventId)).slice(0, room);
          ahead = ahead.filter((p) => !due.includes(p));
          if (due.length === 0 && running.size === 0) break;
          if (!held.endpoint.enabled) {
            // Disabled (410, 5 days of failures, or by its owner): what is still pending ends here, unattempted.
            await Promise.all(due.map((p) => failPending(accountId, endpointId, p, 'endpoint_disabled')));
            if (running.size === 0) continue;
          } else {
            for (const pending of due) {
              if (!(await this.slots.acquire(accountId, slow))) break;
              const lane = lanes.pop() as number;
              const done = () => {
                running.delete(pending.eventId);
                lanes.push(lane);
              };
              running.set(pending.eventId, this.attempt(held, pending, { lane, slow, onAnswer, done }));
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
      if (slowAtLease) this.slowHeld--;
      renewing.abort();
      await releaseEndpoint(accountId, endpointId, this.owner);
    }
  }

  private async attempt(
    held: HeldEndpoint,
    pending: PendingDelivery,
    how: { lane: number; slow: boolean; onAnswer: (answer: Answer) => void; done: () => void },
  ) {
    try {
      this.counts[await deliverOnce(held, pending, how.lane, how.onAnswer)]++;
    } catch (error) {
      // The store failed the claim or the record: the delivery stays pending, and comes due again.
      this.onError(error);
    } finally {
      how.done();
      this.slots.release(held.accountId, how.slow);
    }
  }
}
