import type { TicketStatus } from '#lib/tickets/types.ts';
import { moveDueEntry } from '../index/due.ts';
import { orderKeys, RULE_SWEEP_SLOTS, ruleSweepKeys } from '../keys.ts';
import { batchGetAll, getItem, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import { saveAtRevision } from '../store/revision.ts';
import { type CommitAction, type TransactAction, transact } from '../store/transact.ts';
import { type RuleSweep, sweepOf } from './sweeps.ts';

/**
 * The lanes of an account's moment sweep (docs/rules.md, "Moments of tickets already there", "Lanes"): the root a
 * rule write puts (./sweeps.ts) is split, in one transaction guarded by its `rv` and `rev`, into lanes, each a range
 * of one not-closed status's postings (`after`, where it is; `before`, its end, or none: to the newest), each in a
 * slot of its own (RULE_SWEEP_SLOTS) with its own due entry, its own place and its own `rev`. A lane's ticket commits
 * check its own item's `rv`, never an item another lane's commits hold (on DynamoDB, transactions in flight that hold
 * one item conflict). The split deletes the root and writes every slot: a lane of this sweep, or a Delete. So when a
 * newer rule write's sweep is split, every lane of an older one is overwritten or gone, and each of its commits and
 * saves after that is refused; and none of the older sweep's lanes exists once the newer one's lanes begin to read.
 */

export interface SweepLane {
  accountId: string;
  slot: number;
  /** The rules version of the rule write whose sweep it is part of. */
  rv: number;
  status: TicketStatus;
  /** The last order key read, or the lane's start (an order key's time: nothing reads as equal); null: the oldest. */
  after: string | null;
  /** Where the lane ends (an order key's time, never a posting's own); null: at the newest. */
  before: string | null;
  rev: number;
}

export type LanePlan = Pick<SweepLane, 'status' | 'after' | 'before'>;

/**
 * A status's lanes: `count` tickets (its exact count), its oldest posting at `oldest` (none: the status is empty),
 * split into ranges of equal time from its oldest to now (`nowUs`), one lane per `perLane` tickets, at least one
 * and at most `most`; the first from the oldest, the last to the newest (a ticket created meanwhile is in it). The
 * ranges' bounds are order keys of number 0, which no ticket has (numbers start at 1): each posting is in exactly
 * one lane. Even in time, not in tickets: an account whose tickets bunch in a stretch of time has lanes of unequal
 * length (docs/rules.md, "Lanes").
 */
export function statusLanes(
  status: TicketStatus,
  count: number,
  oldest: string | undefined,
  nowUs: number,
  sizes: { perLane: number; most: number },
): LanePlan[] {
  const from = oldest ? orderKeys.parts(oldest).createdMicros : nowUs;
  const span = Math.max(0, nowUs - from);
  const lanes = Math.max(1, Math.min(sizes.most, Math.ceil(count / sizes.perLane), span));
  const bound = (i: number) => orderKeys.of(from + Math.floor((span * i) / lanes), 0);
  return Array.from({ length: lanes }, (_, i) => ({
    status,
    after: i === 0 ? null : bound(i),
    before: i === lanes - 1 ? null : bound(i + 1),
  }));
}

const laneOf = (item: Record<string, unknown>, accountId: string, slot: number): SweepLane => ({
  accountId,
  slot,
  rv: Number(item.rv),
  status: String(item.status) as TicketStatus,
  after: item.after == null ? null : String(item.after),
  before: item.before == null ? null : String(item.before),
  rev: Number(item.rev),
});

/** A lane as stored (strongly consistent), or undefined: done, or overwritten by a later split's Delete. */
export async function getSweepLane(accountId: string, slot: number): Promise<SweepLane | undefined> {
  const item = await getItem(ruleSweepKeys.lane(accountId, slot));
  return item ? laneOf(item, accountId, slot) : undefined;
}

/**
 * Splits the root into `lanes` (at most RULE_SWEEP_SLOTS, each due at `atMs`): the root deleted if still the one read
 * (rv, rev), every slot put or deleted, in one transaction. False: another run split it first, or a newer rule write
 * replaced it (that run, or the newer sweep, goes on).
 */
export async function splitRuleSweep(sweep: RuleSweep, lanes: LanePlan[], atMs: number): Promise<boolean> {
  if (lanes.length > RULE_SWEEP_SLOTS) throw new Error(`a sweep has at most ${RULE_SWEEP_SLOTS} lanes`);
  const { accountId, rv } = sweep;
  const slots = Array.from({ length: RULE_SWEEP_SLOTS }, (_, slot): TransactAction => {
    const lane = lanes[slot];
    const Key = ruleSweepKeys.lane(accountId, slot);
    if (!lane) return { Delete: { TableName: tableName(), Key } };
    const item = {
      ...Key,
      ...ruleSweepKeys.laneDue(accountId, slot, atMs),
      type: 'rule_sweep_lane',
      rv,
      rev: 0,
    };
    return { Put: { TableName: tableName(), Item: { ...item, ...lane } } };
  });
  const root: TransactAction = {
    Delete: {
      TableName: tableName(),
      Key: ruleSweepKeys.sweep(accountId),
      ConditionExpression: 'rv = :rv AND rev = :rev',
      ExpressionAttributeValues: { ':rv': rv, ':rev': sweep.rev },
    },
  };
  try {
    await transact([root, ...slots]);
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/**
 * A ticket write's condition that the lane is still this sweep's (not overwritten or deleted by the split of a
 * newer rule write's sweep, which computes the ticket again with the newer rules): a ConditionCheck on its `rv`.
 */
export function laneStillAction(lane: SweepLane, refused: () => Error): CommitAction {
  return {
    what: 'rule_sweep_lane',
    action: {
      ConditionCheck: {
        TableName: tableName(),
        Key: ruleSweepKeys.lane(lane.accountId, lane.slot),
        ConditionExpression: 'rv = :rv',
        ExpressionAttributeValues: { ':rv': lane.rv },
      },
    },
    refused,
  };
}

/**
 * Saves a lane's place at the revision read (null: done, the lane deleted): false when another run moved it first,
 * or it is no longer this sweep's (overwritten or deleted by a newer sweep's split).
 */
export async function saveSweepLane(lane: SweepLane, after: string | null): Promise<boolean> {
  return saveAtRevision({
    Key: ruleSweepKeys.lane(lane.accountId, lane.slot),
    rev: lane.rev,
    also: { condition: 'rv = :rv', values: { ':rv': lane.rv } },
    fields: after === null ? null : { after },
  });
}

/** Moves a lane's due entry to `atMs` (a step that failed); gone: nothing. */
export async function postponeSweepLane(accountId: string, slot: number, atMs: number): Promise<void> {
  await moveDueEntry(ruleSweepKeys.lane(accountId, slot), ruleSweepKeys.laneDue(accountId, slot, atMs));
}

/** What is left of the account's sweep: its root (not split yet) and its lanes (one BatchGetItem). */
export async function ruleSweepLeft(accountId: string): Promise<{ root?: RuleSweep; lanes: SweepLane[] }> {
  const keys = [
    ruleSweepKeys.sweep(accountId),
    ...Array.from({ length: RULE_SWEEP_SLOTS }, (_, slot) => ruleSweepKeys.lane(accountId, slot)),
  ];
  const items = await batchGetAll(keys);
  const rootItem = items.find((item) => item.sk === 'SWEEP');
  const lanes = items
    .filter((item) => item.sk === 'LANE')
    .map((item) => laneOf(item, accountId, Number(String(item.pk).split('#').at(-1))))
    .sort((a, b) => a.slot - b.slot);
  return { ...(rootItem ? { root: sweepOf(rootItem, accountId) } : {}), lanes };
}
