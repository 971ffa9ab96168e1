import type { Context } from 'aws-lambda';
import { ERASURE_RUN_MS } from '#functions/workers.ts';
import { moveLegacyLedger } from '#lib/data/erasures.ts';
import { mailEraser } from '#lib/data/mail-store.ts';
import { erasurePass } from '#lib/erasures/runner.ts';
import { logError, workerHandler } from '#lib/log.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * The erasure runner deployed (docs/decisions.md, "Erasing a person"): scheduled every minute
 * (infra/constructs/scheduled-runner.ts), it runs the passes `npm start`'s runner runs (lib/erasures/runner.ts) for
 * up to ERASURE_RUN_MS (less when the function has less time left), again at once while a pass leaves an erasure
 * with steps to go, and returns at the first pass that leaves none (the schedule is its poll). The mail eraser is
 * the stage's mail bucket's (MAIL_BUCKET). Runs may overlap and die anywhere: each erasure resumes from its last
 * saved step, and a second runner on the same erasure stops at its next save (ErasureStepTaken). Each run first moves
 * up to 100 entries of the ledger's legacy partition to their accounts' keys (one Query when none is left; until
 * 2027-03-31: docs/deploy.md, "The erasure ledger's keys").
 */
export const handler = workerHandler('erasure run', async (_event: unknown, context?: Context) => {
  const left = context?.getRemainingTimeInMillis?.() ?? ERASURE_RUN_MS + 30_000;
  const runFor = Math.max(0, Math.min(ERASURE_RUN_MS, left - 30_000));
  const until = nowMillis() + runFor;
  const mail = runFor > 0 ? mailEraser() : undefined;
  const totals = {
    passes: 0,
    completed: 0,
    failed: 0,
    // The move never holds the run's erasures: a store failure or a race with an overlapping run is logged, and the
    // next run moves what is left (each entry's move is a put and a delete, repeatable).
    ledgerMoved:
      runFor > 0
        ? await moveLegacyLedger().catch((error: unknown) => {
            logError(error);
            return 0;
          })
        : 0,
  };
  // The run's place in the due index, from one pass to the next (a backlog read a page further each pass).
  const cursors = new Map<number, Record<string, unknown>>();
  while (nowMillis() < until) {
    const pass = await erasurePass({ mail, cursors });
    totals.passes++;
    totals.completed += pass.completed;
    totals.failed += pass.failed;
    if (!pass.more) break;
  }
  return { answer: undefined, figures: { ...totals, runMs: runFor } };
});
