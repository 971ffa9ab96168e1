import { dueErasures, ErasureStepTaken, postponeErasure } from '#lib/data/erasures.ts';
import { logError } from '#lib/log.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { erasureStep, type StepOptions } from './job.ts';

/**
 * The erasure runner (decisions.md, "Deleting, restoring and erasing"): passes over the running erasures' due
 * entries (gsi2 `ERASURE_DUE#<shard>`, never a Scan), each pass taking every due erasure up to STEPS_PER_PASS
 * steps. A step that fails (the store failed, a conflict) postpones its erasure by RETRY_MS; the job resumes from
 * its last saved step. `npm start` runs it for as long as it runs, as it runs the purge and the breach runner.
 */
export const ERASURE_POLL_MS = 2_000;
const ERASURE_BATCH = 20;
const STEPS_PER_PASS = 200;
const RETRY_MS = 5_000;

/** One pass; `more` when an erasure still has steps to go (the next pass starts at once). */
export async function erasurePass(
  options: StepOptions = {},
): Promise<{ completed: number; failed: number; more: boolean }> {
  const due = await dueErasures(nowMillis(), ERASURE_BATCH);
  let completed = 0;
  let failed = 0;
  let more = false;
  await Promise.all(
    due.map(async ({ accountId, id }) => {
      try {
        for (let steps = 0; steps < STEPS_PER_PASS; steps++) {
          const outcome = await erasureStep(accountId, id, options);
          if (outcome === 'completed') completed++;
          if (outcome !== 'more') return;
        }
        more = true;
      } catch (error) {
        if (error instanceof ErasureStepTaken) return;
        failed++;
        logError(error);
        await postponeErasure(accountId, id, nowMillis() + RETRY_MS).catch(logError);
      }
    }),
  );
  return { completed, failed, more };
}

/** Passes until `until` (epoch ms) or until `stopped()`. */
export async function runErasures(
  until: number,
  options: StepOptions & { pollMs?: number; stopped?: () => boolean } = {},
): Promise<{ passes: number; completed: number }> {
  const totals = { passes: 0, completed: 0 };
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await erasurePass(options);
      totals.passes++;
      totals.completed += pass.completed;
      more = pass.more;
    } catch (error) {
      logError(error);
    }
    if (!more) {
      const end = nowMillis() + Math.min(options.pollMs ?? ERASURE_POLL_MS, Math.max(0, until - nowMillis()));
      while (nowMillis() < end && !options.stopped?.()) await sleep(Math.min(500, end - nowMillis()));
    }
  }
  return totals;
}
