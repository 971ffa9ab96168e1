import type { Context } from 'aws-lambda';
import { DUE_SHARDS, shardsOfRunner } from '#lib/data/webhooks/due-shards.ts';
import { workerHandler } from '#lib/log.ts';
import { nowMillis } from '#lib/time.ts';
import { attemptTimeoutMs } from '#lib/webhooks/deliver.ts';
import { DueRunner } from '#lib/webhooks/due.ts';

/**
 * Webhook attempts (docs/webhooks.md, "The runners"): one runner of the pool. Each schedule rule of the stack
 * (infra/constructs/webhook-dispatcher.ts) invokes it every minute with its place in the pool, `{runner, runners}`
 * (infra/config.ts sizes `runners` per stage), and it works the due shards that place owns (lib/data/webhooks/due-shards.ts,
 * shardsOfRunner) for DUE_RUN_MS (less when the function has less time left than that and an attempt), then waits
 * for the attempts still running to be recorded. An invocation without a place works every shard (a pool of one).
 * Consecutive runs of one place may overlap by their tails: leases keep them off each other's endpoints and
 * deliveries; runners of different places read different shards.
 */
export const DUE_RUN_MS = 50_000;

/** What a schedule rule hands the function: its place in the pool. */
export interface DueRunEvent {
  runner?: number;
  runners?: number;
}

export const handler = workerHandler('webhooks due run', async (event: unknown, context?: Context) => {
  const place = (event ?? {}) as DueRunEvent;
  const runners = place.runners ?? 1;
  const shards = shardsOfRunner(place.runner ?? 0, runners);
  const left = context?.getRemainingTimeInMillis?.() ?? DUE_RUN_MS + attemptTimeoutMs() + 5_000;
  const runFor = Math.max(0, Math.min(DUE_RUN_MS, left - attemptTimeoutMs() - 5_000));
  const runner = new DueRunner({ shards: shards.length === DUE_SHARDS ? undefined : shards });
  await runner.runUntil(nowMillis() + runFor);
  return {
    answer: undefined,
    figures: { ...runner.counts, runMs: runFor, runner: place.runner ?? 0, runners },
  };
});
