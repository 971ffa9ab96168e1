import type { Context } from 'aws-lambda';
import { PURGE_RUN_MS } from '#functions/workers.ts';
import { mailPurger } from '#lib/data/mail-store.ts';
import { workerHandler } from '#lib/log.ts';
import { nowMillis } from '#lib/time.ts';
import { runPurges } from '#lib/trash/purge.ts';

/**
 * The trash's purge deployed (decisions.md, "Deleting, restoring and erasing"): scheduled every few minutes
 * (infra/constructs/scheduled-runner.ts), it runs the purge runner that `npm start` runs (lib/trash/purge.ts) for up
 * to PURGE_RUN_MS (less when the function has less time left): pass after pass while a pass finds a full batch,
 * then it stops at the first pass that leaves nothing due (`pollMs` 0: no waiting inside a run). Runs may overlap
 * and die anywhere: each purge deletes its trash item last, guarded by its version, so the next run finishes it.
 * The accounts' copies of a purged ticket's mail go from the stage's mail bucket (MAIL_BUCKET) with it.
 */
export const handler = workerHandler('trash purge run', async (_event: unknown, context?: Context) => {
  const left = context?.getRemainingTimeInMillis?.() ?? PURGE_RUN_MS + 30_000;
  const runFor = Math.max(0, Math.min(PURGE_RUN_MS, left - 30_000));
  const totals = await runPurges(nowMillis() + runFor, { untilDrained: true, mail: mailPurger() });
  return { answer: undefined, figures: { ...totals, runMs: runFor } };
});
