import type { Context } from 'aws-lambda';
import { IMPORT_RUN_MS } from '#functions/workers.ts';
import { runImports } from '#lib/imports/runner.ts';
import { workerHandler } from '#lib/log.ts';
import { nowMillis } from '#lib/time.ts';

/**
 * The import runner deployed (docs/imports.md, "The runner"): scheduled every minute (infra/constructs/
 * scheduled-runner.ts), it runs the passes `npm start`'s runner runs (lib/imports/runner.ts) for up to IMPORT_RUN_MS
 * (less when the function has less time left), polling every 2 s meanwhile. Its leases are named after the
 * invocation: runs may overlap and die anywhere, and a job a dead run held is taken on from its checkpoint once its
 * lease runs out.
 */
export const handler = workerHandler('import run', async (_event: unknown, context?: Context) => {
  const left = context?.getRemainingTimeInMillis?.() ?? IMPORT_RUN_MS + 30_000;
  const runFor = Math.max(0, Math.min(IMPORT_RUN_MS, left - 30_000));
  const owner = `lambda:${context?.awsRequestId ?? 'local'}`;
  const totals = await runImports(nowMillis() + runFor, { owner });
  return { answer: undefined, figures: { ...totals, runMs: runFor } };
});
