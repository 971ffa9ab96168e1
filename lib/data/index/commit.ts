import { randomInt } from 'node:crypto';
import { addDecimal, negateDecimal } from '#lib/decimal.ts';
import type { EventDraft, ReservedPlaces } from '../events.ts';
import { COUNTER_SHARDS } from '../keys.ts';
import { tableName } from '../store/client.ts';
import { ConcurrentWrite, StaleVersion } from '../store/errors.ts';
import { ATTR, keyString } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import { removeFromBlock, type WritePlan } from './additions.ts';
import { addToCounter, put, remove, type StatsCondition, statsActions } from './commit-actions.ts';
import type { SearchTerms } from './declaration.ts';
import { directoryPlan } from './directory.ts';
import { type EntityItems, entityItems, type Index } from './items.ts';
import { type Pending, pendingDeleted } from './pending.ts';

/**
 * The commits of indexed entities: a create or an update writes the entity and every index item it adds,
 * removes or counts in one transaction, so every reader sees all of it or none of it (docs/data-model.md, "All
 * or nothing"). What does not fit in DynamoDB's 100 actions is put first, marked unconfirmed (`u`): readers count
 * and list a marked item or block key only once they have read its entity and found it holds it.
 */

export interface WriteOptions {
  statsCondition?: StatsCondition | undefined;
  /** Written last in the same commit, all or nothing with the change (an Idempotency-Key's kept answer). */
  attach?: CommitAction[] | undefined;
  /** The change's events, written in its commit (lib/data/events.ts). */
  events?: EventDraft[] | undefined;
  /**
   * A change entering a closed stats cell (closed-cells.ts: a deleted team's) is refused with this error; without
   * it, closed cells are not looked at.
   */
  closed?: (() => Error) | undefined;
  /** Places a create took for its events with its number. */
  reserved?: ReservedPlaces | undefined;
  /** The version a create writes (1; a restore's: the version its deletion gave, plus one). */
  version?: number | undefined;
  /** The counter shard an update writes (updates written together share one: merge-plans.ts); random without. */
  shard?: number | undefined;
  /**
   * A create's pending item, put already (pending.ts): its terms, unbounded and sorted postings and block keys are
   * written before its commit, and the commit deletes the pending item. Once spent (a retry), they are in the
   * commit again.
   */
  pending?: Pending | undefined;
}

export const eventsOf = (accountId: string, options: WriteOptions): WritePlan['events'] =>
  options.events?.length
    ? { accountId, drafts: options.events, reserved: options.reserved ? [options.reserved] : [] }
    : undefined;

/**
 * A create's commit: the entity, the stats item (with its condition), the bounded postings and every unbounded
 * counter; then the block keys, the sorted and other postings, the number and prefix terms as they fit; the
 * attached actions last. With its pending item (pending.ts) the block keys, sorted and unbounded postings and terms
 * are written before the commit instead, and the commit deletes the pending item.
 */
export function planCreate<E>(
  index: Index<E>,
  accountId: string,
  entity: E,
  options: WriteOptions = {},
): WritePlan {
  const items = entityItems(index, accountId, entity, options.version ?? 1);
  // Consecutive creates (consecutive numbers) add to different shards.
  const shard = index.declaration.order(entity).number % COUNTER_SHARDS;
  const stats = statsActions(
    index,
    accountId,
    items.statsAdds,
    shard,
    options.statsCondition,
    options.closed,
  );
  // New items only reads meet, put first at half their units when the create put its pending item (pending.ts).
  const pending = options.pending?.spent === false ? options.pending : undefined;
  const numberTerm = items.numberTerm ? [items.numberTerm] : [];
  const newItems = [...items.sortedPostings, ...items.unbounded.map((u) => u.posting), ...items.prefixTerms];
  const fixed: CommitAction[] = [
    ...(pending ? [pendingDeleted(pending)] : []),
    {
      what: index.types.entity,
      action: {
        Put: { TableName: tableName(), Item: items.entity, ConditionExpression: 'attribute_not_exists(pk)' },
      },
      // Order keys are unique: never, unless the same create is committed twice.
      refused: () => new ConcurrentWrite(),
    },
    ...stats,
    ...items.boundedPostings.map((p) => put('posting', p)),
    ...(pending ? [] : numberTerm.map((t) => put('term', t))),
    ...items.unbounded.map((u) => addToCounter(index.keys.counter(accountId, u.dim, shard), 1)),
  ];
  return {
    fixed,
    // Without a pending item: blocks, sorted postings, postings and terms as they fit; put first, marked, otherwise
    // (readers confirm them: confirmed.ts).
    additions: pending
      ? []
      : [...items.blocks.map((block) => ({ block })), ...newItems.map((put) => ({ put }))],
    marked: pending ? { pending, items: [...newItems, ...numberTerm], blocks: items.blocks } : undefined,
    // Cut in after the additions (additions.ts, cutPlan): the entries of the dimensions it enters (directory.ts).
    directory: directoryPlan(index, accountId, index.dimensionsOf(accountId, entity)),
    attached: options.attach ?? [],
    events: eventsOf(accountId, options),
  };
}

/** A change of an entity read at `version`: before and after, as the domain decided it. */
export interface EntityChange<E> {
  before: E;
  after: E;
  version: number;
}

/**
 * An update's commit, guarded by the version read: the entity, the stats item, every posting, block key and
 * term the change removes or adds, every counter it moves, the attached actions. Removals and counter moves
 * must fit (UpdateTooLarge otherwise); additions that do not fit are put first, marked, as for creates.
 */
export function planUpdate<E>(
  index: Index<E>,
  accountId: string,
  change: EntityChange<E>,
  options: WriteOptions = {},
): WritePlan {
  const newVersion = change.version + 1;
  // Terms unchanged (most changes: a status, an assignee), none of them is written or removed: not keyed at all.
  const prefixTerms = !samePrefixes(index.termsOf(change.before), index.termsOf(change.after));
  const before = entityItems(index, accountId, change.before, 1, { prefixTerms });
  const after = entityItems(index, accountId, change.after, newVersion, { prefixTerms });

  // On a shard of its own choosing (updates have no consecutive numbers to spread them).
  const shard = options.shard ?? randomInt(COUNTER_SHARDS);
  const stats = statsActions(
    index,
    accountId,
    statsDelta(before, after),
    shard,
    options.statsCondition,
    options.closed,
  );

  const bounded = diff(before.boundedPostings, after.boundedPostings);
  // A sorted posting moves when the sort value or the dimension changes (at most a few: bounded dimensions only).
  const sorted = diff(before.sortedPostings, after.sortedPostings);
  const unboundedPostings = diff(
    before.unbounded.map((u) => u.posting),
    after.unbounded.map((u) => u.posting),
  );
  const counterOf = (posting: Record<string, unknown>, all: EntityItems['unbounded']) =>
    index.keys.counter(
      accountId,
      all.find((u) => keyString(u.posting) === keyString(posting))?.dim as string,
      shard,
    );
  const terms = diff(before.prefixTerms, after.prefixTerms);
  // An entity's block in a dimension is the same item before and after (its number does not change).
  const blocks = diff(
    before.blocks.map((b) => ({ ...b.key, entry: b })),
    after.blocks.map((b) => ({ ...b.key, entry: b })),
  );

  const fixed: CommitAction[] = [
    versionedPut(index.types.entity, after.entity, change.version),
    ...stats,
    ...unboundedPostings.removed.map((p) => addToCounter(counterOf(p, before.unbounded), -1)),
    ...unboundedPostings.added.map((p) => addToCounter(counterOf(p, after.unbounded), 1)),
    ...bounded.removed.map((p) => remove('posting', p)),
    ...bounded.added.map((p) => put('posting', p)),
    ...sorted.removed.map((p) => remove('sorted', p)),
    ...unboundedPostings.removed.map((p) => remove('posting', p)),
    ...blocks.removed.map(
      (b): CommitAction => ({ what: 'block', action: { Update: removeFromBlock(b.entry) } }),
    ),
    ...terms.removed.map((t) => remove('term', t)),
  ];
  return {
    fixed,
    additions: [
      ...blocks.added.map((b) => ({ block: b.entry })),
      ...sorted.added.map((p) => ({ put: p })),
      ...unboundedPostings.added.map((p) => ({ put: p })),
      ...terms.added.map((p) => ({ put: p })),
    ],
    directory: directoryPlan(index, accountId, enteredDimensions(index, accountId, change)),
    attached: options.attach ?? [],
    events: eventsOf(accountId, options),
  };
}

/**
 * The stats cells' changes of an update: minus what the entity added before, plus what it adds after (counts and
 * sums), exactly.
 */
function statsDelta(before: EntityItems, after: EntityItems): [string, string][] {
  const delta = new Map<string, string>();
  for (const [a, amount] of before.statsAdds)
    delta.set(a, addDecimal(delta.get(a) ?? '0', negateDecimal(amount)));
  for (const [a, amount] of after.statsAdds) delta.set(a, addDecimal(delta.get(a) ?? '0', amount));
  return [...delta];
}

/**
 * The condition that an entity's item is still at the version read. Entities written before versions existed have
 * none: they are at version 1. An entity deleted meanwhile has no item at all: the change is refused, never a write
 * that brings it back.
 */
export function versionGuard(version: number) {
  return {
    ConditionExpression:
      version === 1
        ? 'attribute_exists(pk) AND (attribute_not_exists(#v) OR #v = :version)'
        : '#v = :version',
    ExpressionAttributeNames: { '#v': ATTR.version },
    ExpressionAttributeValues: { ':version': version },
  };
}

/** The entity's item put, guarded by the version read. */
function versionedPut(what: string, item: Record<string, unknown>, version: number): CommitAction {
  return {
    what,
    action: { Put: { TableName: tableName(), Item: item, ...versionGuard(version) } },
    refused: () => new StaleVersion(),
  };
}

/** The dimensions an update enters (those of the entity before have their directory entries already). */
function enteredDimensions<E>(index: Index<E>, accountId: string, change: EntityChange<E>): string[] {
  const before = new Set(index.dimensionsOf(accountId, change.before));
  return index.dimensionsOf(accountId, change.after).filter((d) => !before.has(d));
}

const samePrefixes = (a: SearchTerms, b: SearchTerms) =>
  a.prefixes.length === b.prefixes.length && a.prefixes.every((term, i) => term === b.prefixes[i]);

/** Items in `from` and not in `to` (removed), and the other way round (added), by key. */
function diff<T extends { pk?: unknown; sk?: unknown }>(from: T[], to: T[]) {
  const fromKeys = new Set(from.map(keyString));
  const toKeys = new Set(to.map(keyString));
  return {
    removed: from.filter((i) => !toKeys.has(keyString(i))),
    added: to.filter((i) => !fromKeys.has(keyString(i))),
  };
}
