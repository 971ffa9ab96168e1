import { ALL_DUE_SHARDS, type DueCursors, dueWindowOf, moveDueEntry } from '../index/due.ts';
import { ruleSweepKeys } from '../keys.ts';
import { getItem, tableName } from '../store/client.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * An account's moment sweep (docs/rules.md, "Moments of tickets already there"; docs/data-model.md): its root, an
 * item written in a rule write's own transaction when the write touches an active time rule, so a rule write that
 * commits always sweeps. One per account: a newer write replaces it (a Put), and the sweep begins again from the
 * first ticket with the rules as they then are. It names the rules version of the write that made it (`rv`: every
 * rule write moves it, so no two sweeps of an account share one). Its first step (lib/rules/sweep-split.ts) splits it
 * into lanes (./sweep-lanes.ts), deleting it in the same transaction, guarded by `rv` and `rev`: two overlapping
 * runs never both split it, and a run of a replaced sweep splits nothing. `step` and `after` are a root's place as
 * the sweep kept it before lanes (always 0 and null now; a root of then with a place is split from the start).
 */

export interface RuleSweep {
  accountId: string;
  /** The rules version of the write that made it. */
  rv: number;
  step: number;
  after: string | null;
  rev: number;
}

/** A rule write's sweep item, due at `atMs`, from the first ticket: one Put in the rule write's transaction. */
export function ruleSweepAction(accountId: string, rv: number, atMs: number): CommitAction {
  return {
    what: 'rule_sweep',
    action: {
      Put: {
        TableName: tableName(),
        Item: {
          ...ruleSweepKeys.sweep(accountId),
          ...ruleSweepKeys.due(accountId, atMs),
          type: 'rule_sweep',
          rv,
          step: 0,
          after: null,
          rev: 0,
        },
      },
    },
  };
}

/**
 * The sweeps due at `nowMs`, roots and lanes (a lane names its slot): a window of the due index, a page a shard from
 * where the last ended (dueWindow).
 */
export async function dueRuleSweepWindow(
  nowMs: number,
  cursors: DueCursors,
): Promise<{ entries: { accountId: string; slot?: number | undefined }[]; more: boolean }> {
  return dueWindowOf(ruleSweepKeys, nowMs, ALL_DUE_SHARDS, cursors);
}

/** The account's sweep as stored (strongly consistent), or undefined: none (done, or never). */
export async function getRuleSweep(accountId: string): Promise<RuleSweep | undefined> {
  const item = await getItem(ruleSweepKeys.sweep(accountId));
  return item ? sweepOf(item, accountId) : undefined;
}

export function sweepOf(item: Record<string, unknown>, accountId: string): RuleSweep {
  const after = item.after == null ? null : String(item.after);
  return { accountId, rv: Number(item.rv), step: Number(item.step), after, rev: Number(item.rev) };
}

/** Moves a sweep's due entry to `atMs` (a step that failed); gone: nothing. */
export async function postponeRuleSweep(accountId: string, atMs: number): Promise<void> {
  await moveDueEntry(ruleSweepKeys.sweep(accountId), ruleSweepKeys.due(accountId, atMs));
}
