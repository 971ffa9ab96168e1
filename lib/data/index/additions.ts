import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { type EventDraft, MAX_EVENT_ACTIONS, type ReservedPlaces } from '../events.ts';
import { batchPutAll, dynamo, tableName } from '../store/client.ts';
import { UpdateTooLarge } from '../store/errors.ts';
import { ATTR, keyString } from '../store/items.ts';
import { type CommitAction, MAX_TRANSACTION_ITEMS, type TransactUpdate } from '../store/transact.ts';
import type { DirectoryPlan } from './directory.ts';
import type { BlockEntry } from './items.ts';
import type { PendingWrites } from './pending.ts';

/**
 * Write plans and how they fit one transaction: what a commit adds to the index (block keys as set additions,
 * postings and terms as puts) goes in it as far as it fits; the rest is written before it, marked unconfirmed
 * (`u`). Plans of two entities written together (a new contact and its deal) are cut as one.
 */

/** Items put and block keys added before a commit, marked unconfirmed (none for all but the largest entities). */
export interface UnconfirmedWrites {
  items: Record<string, unknown>[];
  blocks: BlockEntry[];
}

/**
 * Adds a packed key to its block: in the commit (`k`), or before it, marked unconfirmed (`u`: it counts once its
 * entity holds it) or by a create with its pending item (`p`: pending.ts).
 */
export function addToBlock(entry: BlockEntry, set: BlockSet = 'commit'): TransactUpdate {
  return {
    TableName: tableName(),
    Key: entry.key,
    UpdateExpression: 'ADD #k :key',
    ExpressionAttributeNames: { '#k': BLOCK_SETS[set] },
    ExpressionAttributeValues: { ':key': new Set([entry.packed]) },
  };
}

/** The string sets of a block item: keys added in their commit, before it (marked 1), before a create's commit. */
export type BlockSet = 'commit' | 'unconfirmed' | 'pending';
const BLOCK_SETS = {
  commit: ATTR.blockKeys,
  unconfirmed: ATTR.unconfirmed,
  pending: ATTR.pendingBlockKeys,
} as const;

/** Takes a packed key out of its block, whichever set its commit, or a write before it, added it to. */
export function removeFromBlock(entry: BlockEntry): TransactUpdate {
  return {
    TableName: tableName(),
    Key: entry.key,
    UpdateExpression: 'DELETE #k :key, #u :key, #p :key',
    ExpressionAttributeNames: { '#k': ATTR.blockKeys, '#u': ATTR.unconfirmed, '#p': ATTR.pendingBlockKeys },
    ExpressionAttributeValues: { ':key': new Set([entry.packed]) },
  };
}

/**
 * What a write adds to the index beyond its commit's fixed part: postings and terms (puts) and block keys
 * (set additions). As many as fit go in the commit, block keys first (a marked block key costs an entity read
 * to every intersection of its dimension, a marked posting only to the pages it falls on); the rest are
 * written first, marked.
 */
export type Addition = { put: Record<string, unknown> } | { block: BlockEntry };

export function splitAdditions(additions: Addition[], room: number) {
  const inCommit = additions
    .slice(0, Math.max(0, room))
    .map(
      (a): CommitAction =>
        'put' in a
          ? { what: 'index', action: { Put: { TableName: tableName(), Item: a.put } } }
          : { what: 'block', action: { Update: addToBlock(a.block) } },
    );
  const spilled = additions.slice(Math.max(0, room));
  return {
    inCommit,
    unconfirmed: {
      items: spilled.flatMap((a) => ('put' in a ? [{ ...a.put, [ATTR.unconfirmed]: 1 }] : [])),
      blocks: spilled.flatMap((a) => ('block' in a ? [a.block] : [])),
    },
  };
}

export async function putUnconfirmed(unconfirmed: UnconfirmedWrites): Promise<void> {
  await Promise.all([
    unconfirmed.items.length > 0 ? batchPutAll(unconfirmed.items) : undefined,
    ...unconfirmed.blocks.map((b) => dynamo.send(new UpdateCommand(addToBlock(b, 'unconfirmed')))),
  ]);
}

/**
 * What a write will do, before it is cut to one transaction: the actions that must be in the commit (the
 * entity, counters, removals), the index additions that go in it as far as they fit, and the attached actions.
 */
export interface WritePlan {
  fixed: CommitAction[];
  additions: Addition[];
  attached: CommitAction[];
  /** The change's events (lib/data/events.ts): their places are taken just before the commit, written in it. */
  events: { accountId: string; drafts: EventDraft[]; reserved: ReservedPlaces[] } | undefined;
  /** The directory entries of the dimensions it enters (directory.ts): cut in after the additions. */
  directory?: DirectoryPlan | undefined;
  /** New index items put and block keys added before the commit by a create with its pending item (pending.ts). */
  marked?: PendingWrites | undefined;
  /**
   * Index items a deletion removes that do not fit its commit (the search terms of the largest entities): marked
   * unconfirmed before it (so they count only while their entity holds them), deleted after it.
   */
  removedAround?: Record<string, unknown>[] | undefined;
}

/** A plan cut to DynamoDB's 100 actions: the marked writes before the commit, and the commit. */
export interface CutPlan {
  unconfirmed: UnconfirmedWrites;
  /** The one transaction that makes the change exist. */
  commit: CommitAction[];
  /** The directory entries it writes (in the commit or before it), remembered once it landed. */
  directory: Record<string, unknown>[];
  /**
   * Directory entries put before the commit, plain (DirectoryPlan.plain), beside the call taking its event places:
   * only with `early` (a write that takes its places then; a create took its with its number, and a call of their
   * own would cost it a round trip: they stay in its commit).
   */
  early: Record<string, unknown>[];
}

/**
 * Cuts a plan: the fixed and attached actions, then as many additions as fit (the rest are written first,
 * marked). Fixed and attached actions that alone pass the limit: UpdateTooLarge.
 */
export function cutPlan(plan: WritePlan, options: { early?: boolean } = {}): CutPlan {
  const eventRoom = (plan.events?.drafts.length ?? 0) * MAX_EVENT_ACTIONS;
  const room = MAX_TRANSACTION_ITEMS - plan.fixed.length - plan.attached.length - eventRoom;
  if (room < 0) throw new UpdateTooLarge();
  // Directory entries last: the fresh ones when the other additions fit, every one when they spill anyway (so
  // that what is written before the commit does not depend on what this container wrote earlier).
  const spills = plan.additions.length > room;
  const directory = (spills ? plan.directory?.all : plan.directory?.fresh) ?? [];
  const plain = spills || !options.early ? undefined : plan.directory?.plain;
  const early = plain ? directory.filter((e) => plain.has(keyString(e))) : [];
  const { inCommit, unconfirmed } = splitAdditions(
    [...plan.additions, ...directory.filter((e) => !early.includes(e)).map((put) => ({ put }))],
    room,
  );
  return { unconfirmed, commit: [...plan.fixed, ...inCommit, ...plan.attached], directory, early };
}

/**
 * Plans of several entities as one (a new contact and its first deal): their fixed and attached actions in one
 * commit, their additions filling what is left of it together.
 */
export function combinePlans(...plans: WritePlan[]): WritePlan {
  return {
    fixed: plans.flatMap((p) => p.fixed),
    additions: plans.flatMap((p) => p.additions),
    attached: plans.flatMap((p) => p.attached),
    events: combineEvents(plans),
    directory: {
      all: plans.flatMap((p) => p.directory?.all ?? []),
      fresh: plans.flatMap((p) => p.directory?.fresh ?? []),
      plain: new Set(plans.flatMap((p) => [...(p.directory?.plain ?? [])])),
    },
  };
}

function combineEvents(plans: WritePlan[]): WritePlan['events'] {
  const all = plans.flatMap((p) => (p.events ? [p.events] : []));
  const first = all[0];
  return (
    first && {
      accountId: first.accountId,
      drafts: all.flatMap((e) => e.drafts),
      reserved: all.flatMap((e) => e.reserved),
    }
  );
}
