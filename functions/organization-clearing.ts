import type { Context } from 'aws-lambda';
import { CLEARING_RUN_MS } from '#functions/workers.ts';
import { workerHandler } from '#lib/log.ts';
import { runClearings } from '#lib/organizations/clearing-runner.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * The organization clearing runner deployed (decisions.md: a deleted organization's tickets and contacts lose it
 * within 60 seconds): scheduled every minute (infra/constructs/scheduled-runner.ts), it runs the passes `npm
 * start`'s runner runs (lib/organizations/clearing-runner.ts) for up to CLEARING_RUN_MS (less when the function has
 * less time left), polling every 2 s meanwhile, so a deletion waits seconds, not a minute. Runs may overlap and die
 * anywhere: every ticket and contact is cleared in its own versioned commit, and the next pass goes on from what the
 * store holds.
 */
export const handler = workerHandler(
  'organization clearing run',
  async (_event: unknown, context?: Context) => {
    const left = context?.getRemainingTimeInMillis?.() ?? CLEARING_RUN_MS + 30_000;
    const runFor = Math.max(0, Math.min(CLEARING_RUN_MS, left - 30_000));
    const totals = await runClearings(nowMillis() + runFor);
    return { answer: undefined, figures: { ...totals, runMs: runFor } };
  },
);
