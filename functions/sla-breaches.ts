import type { Context } from 'aws-lambda';
import { workerHandler } from '#lib/log.ts';
import { runBreaches } from '#lib/tickets/breaches.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * Service-level breaches on time (docs/sla.md): scheduled every minute (infra/constructs/sla-breach-runner.ts), it
 * runs the breach runner for BREACH_RUN_MS (less when the function has less time left), reading the tickets' due
 * index every second (lib/tickets/breaches.ts). Consecutive runs may overlap by their tails, and a run may die at
 * any point: every breach commit is guarded by the ticket's version and the breach it records, so each clock's
 * breach is written once whatever runs.
 */
export const BREACH_RUN_MS = 55_000;

export const handler = workerHandler('sla breaches run', async (_event: unknown, context?: Context) => {
  const left = context?.getRemainingTimeInMillis?.() ?? BREACH_RUN_MS + 10_000;
  const runFor = Math.max(0, Math.min(BREACH_RUN_MS, left - 10_000));
  const totals = await runBreaches(nowMillis() + runFor);
  return { answer: undefined, figures: { ...totals, runMs: runFor } };
});
