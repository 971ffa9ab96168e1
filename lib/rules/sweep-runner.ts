import type { DueCursors } from '#lib/data/index/due.ts';
import { dueRuleSweepWindow, postponeRuleSweep } from '#lib/data/rules/sweeps.ts';
import { duePass } from '#lib/due-pass.ts';
import { nowMillis } from '#lib/time.ts';
import { ruleSweepStep, type SweepRules } from './sweep.ts';

/**
 * The moment sweep runner's pass (decisions.md, "Business rules": a time rule fires within 60 seconds of its moment,
 * on tickets that were there before it too): over the due sweeps (gsi2 `RULE_SWEEP_DUE#<shard>`, never a Scan),
 * SWEEP_BATCH of them a pass shared round-robin by account (duePass), each taken up to STEPS_PER_PASS bounded steps
 * (./sweep.ts; a caller may give fewer); a step that fails moves it RETRY_MS on. It runs in the people follow-ups
 * runner's loop (lib/organizations/clearing-runner.ts, runClearings) beside the hand-backs: `npm start` and the
 * scheduled worker run it.
 */
const SWEEP_BATCH = 20;
const STEPS_PER_PASS = 40;
const RETRY_MS = 5_000;

export async function ruleSweepPass(
  options: { cursors?: DueCursors; stepsPerPass?: number } = {},
): Promise<{ done: number; failed: number; more: boolean }> {
  const steps = options.stepsPerPass ?? STEPS_PER_PASS;
  const window = await dueRuleSweepWindow(nowMillis(), options.cursors ?? new Map());
  return duePass(window, SWEEP_BATCH, {
    work: async ({ accountId }) => {
      // The rules its steps read, read once for them (./sweep.ts, rulesOf).
      const held: SweepRules = new Map();
      for (let taken = 0; taken < steps; taken++) {
        // Done, or another run (or a newer rule write's sweep) goes on with it.
        if ((await ruleSweepStep(accountId, held)) !== 'more') return 'done';
      }
      return 'more';
    },
    postpone: ({ accountId }) => postponeRuleSweep(accountId, nowMillis() + RETRY_MS),
  });
}
