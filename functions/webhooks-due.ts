import type { Context } from 'aws-lambda';
import { workerHandler } from '#lib/log.ts';
import { attemptTimeoutMs } from '#lib/webhooks/deliver.ts';
import { DueRunner } from '#lib/webhooks/due.ts';

/**
 * Webhook attempts (docs/webhooks.md): scheduled every minute, runs the due runner for DUE_RUN_MS (less when the
 * function has less time left than that and an attempt), then waits for the attempts still running to be recorded.
 * Consecutive runs may overlap by their tails: leases keep them off each other's endpoints and deliveries.
 */
export const DUE_RUN_MS = 50_000;

export const handler = workerHandler('webhooks due run', async (_event: unknown, context?: Context) => {
  const left = context?.getRemainingTimeInMillis?.() ?? DUE_RUN_MS + attemptTimeoutMs() + 5_000;
  const runFor = Math.max(0, Math.min(DUE_RUN_MS, left - attemptTimeoutMs() - 5_000));
  const runner = new DueRunner();
  await runner.runUntil(Date.now() + runFor);
  return { answer: undefined, figures: { ...runner.counts, runMs: runFor } };
});
