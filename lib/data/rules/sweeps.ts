import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ALL_DUE_SHARDS, type DueCursors, dueWindowOf, moveDueEntry } from '../index/due.ts';
import { ruleSweepKeys } from '../keys.ts';
import { dynamo, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import type { CommitAction } from '../store/transact.ts';

/**
 * An account's moment sweep (docs/rules.md, "Moments of tickets already there"; docs/data-model.md): an item written
 * in a rule write's own transaction when the write touches an active time rule, so a rule write that commits always
 * sweeps. One per account: a newer write replaces it (a Put), and the sweep begins again from the first ticket with
 * the rules as they then are. It names the rules version of the write that made it (`rv`: every rule write moves
 * it, so no two sweeps of an account share one) and where it is (`step`: which not-closed status, `after`: the last
 * order key read). The runner (lib/rules/sweep-runner.ts) moves it a step at a time, each save guarded by `rv` and
 * `rev`, so two overlapping runs never both move it and a run of a replaced sweep moves nothing; it is deleted once
 * done.
 */

export interface RuleSweep {
  accountId: string;
  /** The rules version of the write that made it. */
  rv: number;
  /** The status being swept (an index of the swept statuses) and the last order key read in it. */
  step: number;
  after: string | null;
  rev: number;
}

/** The place a sweep saves (null: done). */
export type SweepPlace = Pick<RuleSweep, 'step' | 'after'> | null;

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

/** The sweeps due at `nowMs`: a window of the due index, a page a shard from where the last ended (dueWindow). */
export async function dueRuleSweepWindow(
  nowMs: number,
  cursors: DueCursors,
): Promise<{ entries: { accountId: string }[]; more: boolean }> {
  return dueWindowOf(ruleSweepKeys, nowMs, ALL_DUE_SHARDS, cursors);
}

/** The account's sweep as stored (strongly consistent), or undefined: none (done, or never). */
export async function getRuleSweep(accountId: string): Promise<RuleSweep | undefined> {
  const item = await getItem(ruleSweepKeys.sweep(accountId));
  if (!item) return undefined;
  const after = item.after == null ? null : String(item.after);
  return { accountId, rv: Number(item.rv), step: Number(item.step), after, rev: Number(item.rev) };
}

/**
 * A ticket write's condition that the sweep is still the one read (not replaced by a newer rule write, whose sweep
 * computes the ticket again with the newer rules): a ConditionCheck on its `rv`.
 */
export function sweepStillAction(sweep: RuleSweep, refused: () => Error): CommitAction {
  return {
    what: 'rule_sweep',
    action: {
      ConditionCheck: {
        TableName: tableName(),
        Key: ruleSweepKeys.sweep(sweep.accountId),
        ConditionExpression: 'rv = :rv',
        ExpressionAttributeValues: { ':rv': sweep.rv },
      },
    },
    refused,
  };
}

/**
 * Saves a sweep's place at the revision read: false when another run moved it first, or a newer rule write replaced
 * it (this run stops; the other, or the new sweep, goes on). Done (null): the item is deleted.
 */
export async function saveRuleSweep(sweep: RuleSweep, place: SweepPlace): Promise<boolean> {
  const Key = ruleSweepKeys.sweep(sweep.accountId);
  const guard = {
    ConditionExpression: 'rv = :rv AND rev = :rev',
    ExpressionAttributeValues: { ':rv': sweep.rv, ':rev': sweep.rev },
  };
  try {
    if (!place) await dynamo.send(new DeleteCommand({ TableName: tableName(), Key, ...guard }));
    else {
      await dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key,
          UpdateExpression: 'SET #step = :step, #after = :after, rev = :next',
          ...guard,
          ExpressionAttributeNames: { '#step': 'step', '#after': 'after' },
          ExpressionAttributeValues: {
            ...guard.ExpressionAttributeValues,
            ':step': place.step,
            ':after': place.after,
            ':next': sweep.rev + 1,
          },
        }),
      );
    }
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Moves a sweep's due entry to `atMs` (a step that failed); gone: nothing. */
export async function postponeRuleSweep(accountId: string, atMs: number): Promise<void> {
  await moveDueEntry(ruleSweepKeys.sweep(accountId), ruleSweepKeys.due(accountId, atMs));
}
