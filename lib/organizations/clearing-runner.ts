import type { DueCursors } from '#lib/data/index/due.ts';
import {
  dueClearingWindow,
  finishClearing,
  getClearing,
  postponeClearing,
} from '#lib/data/organizations/clearing.ts';
import { fairShare } from '#lib/fair-share.ts';
import { logError } from '#lib/log.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { CLEARING_GRACE_MS, clearingStep } from './clearing.ts';

/**
 * The clearing runner (decisions.md: deleting an organization sets `organization` to null on its tickets and
 * contacts within 60 seconds): passes over the deleted organizations' due entries (gsi2
 * `ORGANIZATION_CLEARING_DUE#<shard>`, never a Scan), CLEARING_BATCH of them a pass shared round-robin by account
 * (fairShare), each taken up to STEPS_PER_PASS bounded steps (./clearing.ts). A clearing that finds nothing left is
 * closed once its deletion is CLEARING_GRACE_MS old (until then it is due again at that time); a step that fails
 * moves it RETRY_MS on, and the next pass goes on from what the store holds. `npm start` runs it beside the purge
 * and the erasure runner; deployed, a scheduled worker runs it every minute (functions/workers.ts).
 */
export const CLEARING_POLL_MS = 2_000;
const CLEARING_BATCH = 20;
const STEPS_PER_PASS = 40;
const RETRY_MS = 5_000;

/** One pass; `more` when a clearing still has steps to go or more was due (the next pass starts at once). */
export async function clearingPass(
  options: { cursors?: DueCursors } = {},
): Promise<{ cleared: number; failed: number; more: boolean }> {
  const window = await dueClearingWindow(nowMillis(), options.cursors ?? new Map());
  const due = fairShare(window.entries, (entry) => entry.accountId, CLEARING_BATCH);
  let cleared = 0;
  let failed = 0;
  let more = window.more || window.entries.length > due.length;
  await Promise.all(
    due.map(async ({ accountId, id }) => {
      try {
        const clearing = await getClearing(accountId, id);
        if (!clearing) return;
        for (let steps = 0; steps < STEPS_PER_PASS; steps++) {
          if ((await clearingStep(accountId, id, nowMillis())) === 'more') continue;
          const closes = clearing.deletedMs + CLEARING_GRACE_MS;
          if (nowMillis() >= closes) {
            await finishClearing(accountId, id);
            cleared++;
          } else await postponeClearing(accountId, id, closes);
          return;
        }
        more = true;
      } catch (error) {
        failed++;
        logError(error);
        await postponeClearing(accountId, id, nowMillis() + RETRY_MS).catch(logError);
      }
    }),
  );
  return { cleared, failed, more };
}

/** Passes until `until` (epoch ms) or until `stopped()`; with `untilDrained`, also once nothing is due. */
export async function runClearings(
  until: number,
  options: { pollMs?: number; stopped?: () => boolean; untilDrained?: boolean } = {},
): Promise<{ passes: number; cleared: number }> {
  const totals = { passes: 0, cleared: 0 };
  // The run's place in the due index, from one pass to the next: a backlog is read a page further each pass.
  const cursors: DueCursors = new Map();
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await clearingPass({ cursors });
      totals.passes++;
      totals.cleared += pass.cleared;
      more = pass.more;
    } catch (error) {
      logError(error);
    }
    if (!more && options.untilDrained) break;
    if (!more) {
      const end =
        nowMillis() + Math.min(options.pollMs ?? CLEARING_POLL_MS, Math.max(0, until - nowMillis()));
      while (nowMillis() < end && !options.stopped?.()) await sleep(Math.min(500, end - nowMillis()));
    }
  }
  return totals;
}
