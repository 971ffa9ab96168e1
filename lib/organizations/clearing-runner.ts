import type { DueCursors } from '#lib/data/index/due.ts';
import {
  dueClearingWindow,
  finishClearing,
  getClearing,
  postponeClearing,
} from '#lib/data/organizations/clearing.ts';
import { duePass } from '#lib/due-pass.ts';
import { logError } from '#lib/log.ts';
import { handBackPass } from '#lib/people/handback-runner.ts';
import { ruleSweepPass } from '#lib/rules/sweep-runner.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { CLEARING_GRACE_MS, clearingStep } from './clearing.ts';

/**
 * The clearing runner (decisions.md: deleting an organization sets `organization` to null on its tickets and
 * contacts within 60 seconds): passes over the deleted organizations' due entries (gsi2
 * `ORGANIZATION_CLEARING_DUE#<shard>`, never a Scan), CLEARING_BATCH of them a pass shared round-robin by account
 * (fairShare), each taken up to STEPS_PER_PASS bounded steps (./clearing.ts). A clearing that finds nothing left is
 * closed once its deletion is CLEARING_GRACE_MS old (until then it is due again at that time); a step that fails
 * moves it RETRY_MS on, and the next pass goes on from what the store holds. The run also passes over the
 * hand-backs (lib/people/handback-runner.ts) and the rules' moment sweeps (lib/rules/sweep-runner.ts): one "people
 * follow-ups" runner, the same shape of bounded work from a due index, one schedule and one alarm. `npm start` runs it beside the purge and the erasure runner; deployed,
 * a scheduled worker runs it every minute (functions/workers.ts).
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
  const pass = await duePass(window, CLEARING_BATCH, {
    work: async ({ accountId, id }) => {
      const clearing = await getClearing(accountId, id);
      if (!clearing) return 'done';
      for (let steps = 0; steps < STEPS_PER_PASS; steps++) {
        if ((await clearingStep(accountId, id, nowMillis())) === 'more') continue;
        const closes = clearing.deletedMs + CLEARING_GRACE_MS;
        if (nowMillis() >= closes) await finishClearing(accountId, id);
        else await postponeClearing(accountId, id, closes);
        return 'done';
      }
      return 'more';
    },
    postpone: ({ accountId, id }) => postponeClearing(accountId, id, nowMillis() + RETRY_MS),
  });
  return { cleared: pass.done, failed: pass.failed, more: pass.more };
}

/**
 * Passes of the follow-ups (organization clearings, hand-backs: lib/people/handback-runner.ts, and moment sweeps:
 * lib/rules/sweep-runner.ts) until
 * `until` (epoch ms) or until `stopped()`; with `untilDrained`, also once nothing is due.
 */
export async function runClearings(
  until: number,
  options: { pollMs?: number; stopped?: () => boolean; untilDrained?: boolean } = {},
): Promise<{ passes: number; cleared: number; handedBack: number }> {
  const totals = { passes: 0, cleared: 0, handedBack: 0 };
  // The run's place in each due index, from one pass to the next: a backlog is read a page further each pass.
  const cursors: DueCursors = new Map();
  const handBackCursors: DueCursors = new Map();
  const sweepCursors: DueCursors = new Map();
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const [pass, handBacks, sweeps] = await Promise.all([
        clearingPass({ cursors }),
        handBackPass({ cursors: handBackCursors }),
        ruleSweepPass({ cursors: sweepCursors }),
      ]);
      totals.passes++;
      totals.cleared += pass.cleared;
      totals.handedBack += handBacks.done;
      more = pass.more || handBacks.more || sweeps.more;
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
