import { dueErasureWindow, ErasureStepTaken, postponeErasure } from '#lib/data/erasures.ts';
import type { DueCursors } from '#lib/data/index/due.ts';
import { fairShare } from '#lib/fair-share.ts';
import { logError } from '#lib/log.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { erasureStep, type StepOptions } from './job.ts';

/**
 * The erasure runner (decisions.md, "Deleting, restoring and erasing"): passes over the running erasures' due
 * entries (gsi2 `ERASURE_DUE#<shard>`, never a Scan), each pass taking every due erasure up to STEPS_PER_PASS
 * steps, ERASURE_BATCH erasures a pass shared round-robin by account (fairShare: one account's thousand erasures
 * leave another account's their place in the next pass). A step that fails (the store failed, a conflict) postpones its erasure by RETRY_MS; the job resumes from
 * its last saved step. `npm start` runs it for as long as it runs, as it runs the purge and the breach runner.
 */
export const ERASURE_POLL_MS = 2_000;
const ERASURE_BATCH = 20;
const STEPS_PER_PASS = 200;
const RETRY_MS = 5_000;

/**
 * One pass over a window of the due erasures (a page a due shard, from where the run's last window ended:
 * `cursors`); `more` when an erasure still has steps to go or more was due (the next pass starts at once).
 */
export async function erasurePass(
  options: StepOptions & { cursors?: DueCursors } = {},
): Promise<{ completed: number; failed: number; more: boolean }> {
  const window = await dueErasureWindow(nowMillis(), options.cursors ?? new Map());
  const due = fairShare(window.entries, (entry) => entry.accountId, ERASURE_BATCH);
  let completed = 0;
  let failed = 0;
  let more = window.more || window.entries.length > due.length;
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
  // The run's place in the due index, from one pass to the next: a backlog is read a page further each pass.
  const cursors: DueCursors = new Map();
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await erasurePass({ ...options, cursors });
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
