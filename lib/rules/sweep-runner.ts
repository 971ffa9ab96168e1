import type { DueCursors } from '#lib/data/index/due.ts';
import { postponeSweepLane } from '#lib/data/rules/sweep-lanes.ts';
import { dueRuleSweepWindow, postponeRuleSweep } from '#lib/data/rules/sweeps.ts';
import { duePass } from '#lib/due-pass.ts';
import { nowMillis } from '#lib/time.ts';
import { ruleSweepLaneStep, type SweepRules } from './sweep.ts';
import { RULE_SWEEP_LANE_TICKETS, ruleSweepSplit } from './sweep-split.ts';

/**
 * The moment sweep runner's pass (decisions.md, "Business rules": a time rule fires within 60 seconds of its moment,
 * on tickets that were there before it too): over the due sweeps (gsi2 `RULE_SWEEP_DUE#<shard>`, never a Scan), a
 * sweep's root and its lanes each an entry, SWEEP_BATCH of them a pass shared round-robin by account (duePass: an
 * account's lanes share its turn, so one account's 32 lanes delay another's sweep by one batch at most), all at once.
 * A root is split into its lanes (./sweep-split.ts: they are due at once, the next pass takes them); a lane is taken
 * up to STEPS_PER_PASS bounded steps (./sweep.ts; a caller may give fewer). A step that fails moves its entry
 * RETRY_MS on. It runs in the people follow-ups runner's loop (lib/organizations/clearing-runner.ts, runClearings)
 * beside the hand-backs: `npm start` and the scheduled worker run it.
 */
const SWEEP_BATCH = 32;
const STEPS_PER_PASS = 40;
const RETRY_MS = 5_000;

export async function ruleSweepPass(
  options: { cursors?: DueCursors; stepsPerPass?: number; laneTickets?: number } = {},
): Promise<{ done: number; failed: number; more: boolean }> {
  const steps = options.stepsPerPass ?? STEPS_PER_PASS;
  const window = await dueRuleSweepWindow(nowMillis(), options.cursors ?? new Map());
  // The rules each account's lanes read, read once for all of them this pass (./sweep.ts, rulesOf).
  const held = new Map<string, SweepRules>();
  const heldOf = (accountId: string) => held.get(accountId) ?? held.set(accountId, new Map()).get(accountId);
  return duePass(window, SWEEP_BATCH, {
    work: async ({ accountId, slot }) => {
      if (slot === undefined) {
        // Split: its lanes are due now, for the next pass. Lost: another run split it, or a newer root goes on.
        const split = await ruleSweepSplit(accountId, options.laneTickets ?? RULE_SWEEP_LANE_TICKETS);
        return split === 'more' ? 'more' : 'done';
      }
      for (let taken = 0; taken < steps; taken++) {
        // Done, or another run (or a newer rule write's sweep) goes on with it.
        if ((await ruleSweepLaneStep(accountId, slot, heldOf(accountId))) !== 'more') return 'done';
      }
      return 'more';
    },
    postpone: ({ accountId, slot }) =>
      slot === undefined
        ? postponeRuleSweep(accountId, nowMillis() + RETRY_MS)
        : postponeSweepLane(accountId, slot, nowMillis() + RETRY_MS),
  });
}
