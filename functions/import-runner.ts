import type { Context } from 'aws-lambda';
import { IMPORT_RUN_MS, IMPORT_STOP_MARGIN_MS, importRunnerWorker } from '#functions/workers.ts';
import { runImports } from '#lib/imports/runner.ts';
import { environmentSealer } from '#lib/imports/sealers.ts';
import { workerHandler } from '#lib/log.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * The import runner deployed (docs/imports.md, "The runner"): scheduled every minute (infra/constructs/
 * scheduled-runner.ts), it runs the passes `npm start`'s runner runs (lib/imports/runner.ts) until nothing is due,
 * starting steps for up to IMPORT_RUN_MS and cutting the steps still in flight IMPORT_STOP_MARGIN_MS before the
 * function's time is up (the jobs released due at once from their checkpoints): bounded work, ended before the
 * timeout whatever a source does. Its leases are named after the invocation: runs may overlap and die anywhere, and a job a dead run held is
 * taken on from its checkpoint once its lease runs out. Credentials are opened by the environment's Sealer
 * (deployed: KMS Decrypt of the job's data key, once a job and run).
 */
export const handler = workerHandler('import run', async (_event: unknown, context?: Context) => {
  const left = context?.getRemainingTimeInMillis?.() ?? importRunnerWorker.timeoutSeconds * 1000;
  const now = nowMillis();
  const stopBy = now + Math.max(0, left - IMPORT_STOP_MARGIN_MS);
  const runFor = Math.min(IMPORT_RUN_MS, stopBy - now);
  const owner = `lambda:${context?.awsRequestId ?? 'local'}`;
  // Until nothing is due: an idle minute is one read of the due shards, not 50 s of polling.
  const totals = await runImports(now + runFor, {
    owner,
    sealer: environmentSealer(),
    stopBy,
    untilDrained: true,
  });
  return { answer: undefined, figures: { ...totals, runMs: runFor, stopMs: stopBy - now } };
});
