import type { DueCursors } from '#lib/data/index/due.ts';
import { dueHandBackWindow, postponeHandBack } from '#lib/data/people/handbacks.ts';
import { duePass } from '#lib/due-pass.ts';
import { nowMillis } from '#lib/time.ts';
import { handBackStep } from './handback.ts';

/**
 * The hand-back runner's pass (decisions.md: a retired agent's, or a team leaver's, open tickets are unassigned
 * within 60 seconds): over the due hand-backs (gsi2 `HANDBACK_DUE#<shard>`, never a Scan), HAND_BACK_BATCH of them a
 * pass shared round-robin by account, each taken up to STEPS_PER_PASS bounded steps (./handback.ts; a caller may
 * give fewer); a step that
 * fails moves it RETRY_MS on. It runs in the organization clearing runner's loop (runClearings), the one "people
 * follow-ups" runner `npm start` and the scheduled worker run.
 */
const HAND_BACK_BATCH = 20;
const STEPS_PER_PASS = 40;
const RETRY_MS = 5_000;

export async function handBackPass(
  options: { cursors?: DueCursors; stepsPerPass?: number } = {},
): Promise<{ done: number; failed: number; more: boolean }> {
  const steps = options.stepsPerPass ?? STEPS_PER_PASS;
  const window = await dueHandBackWindow(nowMillis(), options.cursors ?? new Map());
  return duePass(window, HAND_BACK_BATCH, {
    work: async ({ accountId, id }) => {
      for (let taken = 0; taken < steps; taken++) {
        const step = await handBackStep(accountId, id);
        // Another run saved it first: that run goes on with it.
        if (step !== 'more') return 'done';
      }
      return 'more';
    },
    postpone: ({ accountId, id }) => postponeHandBack(accountId, id, nowMillis() + RETRY_MS),
  });
}
