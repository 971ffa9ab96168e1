import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { negateDecimal } from '#lib/decimal.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { MAX_EVENT_ACTIONS } from '../events.ts';
import { COUNTER_SHARDS, trashKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import { isConditionFailure, StaleVersion } from '../store/errors.ts';
import { ATTR, type Versioned } from '../store/items.ts';
import { type CommitAction, MAX_TRANSACTION_ITEMS } from '../store/transact.ts';
import { removeFromBlock, type WritePlan } from './additions.ts';
import { eventsOf, planCreate, versionGuard, type WriteOptions } from './commit.ts';
import { addToCounter, remove, statsActions } from './commit-actions.ts';
import { type EntityItems, entityItems, type Index } from './items.ts';

/**
 * Deleting and restoring indexed entities (decisions.md, "Deleting, restoring and erasing"). A deletion is a change
 * like any other, from the entity's state to "in no dimension": its commit takes out exactly what a create put in
 * (the entity item, every posting, sorted posting, block key and term, −1 on every count and counter, its amounts
 * off every sum, its due entry with its item) and puts the trash item holding the entity as it was, in one
 * transaction guarded by the version read. A restore is a create of the entity as it was (at the next version)
 * that deletes its trash item in the same commit. Any entity the engine keeps gets both by its declaration.
 */

/** What the trash item says of the deleted entity (the trash list's answer). */
export interface TrashFacts {
  /** The subject, the deal's name, the contact's full name. */
  title: string;
  deletedMicros: number;
  purgeMicros: number;
  /** The API's timestamps of the two. */
  deletedAt: string;
  purgeAt: string;
}

/** A trash item read back: the entity as it was deleted, its version then, and the trash facts. */
export interface Trashed<E> extends Versioned<E> {
  /** The entity's type (`ticket`, `deal`, `contact`). */
  type: string;
  uuid: string;
  title: string;
  deletedAt: string;
  purgeAt: string;
  purgeMicros: number;
}

/** The trash item's own attributes (beside the keys and the layout's). */
const TRASH = {
  object: 'object',
  type: 'object_type',
  purgeMicros: 'purge_us',
  purgeAt: 'purge_at',
} as const;

export function trashItem<E extends { uuid: string }>(
  index: Index<E>,
  accountId: string,
  stored: Versioned<E>,
  facts: TrashFacts,
): Record<string, unknown> {
  const { uuid } = stored.entity;
  return {
    ...trashKeys.item(accountId, uuid),
    ...trashKeys.listed(accountId, index.types.entity, facts.deletedMicros, uuid),
    ...trashKeys.purgeDue(accountId, uuid, facts.purgeMicros),
    type: 'trash',
    [TRASH.type]: index.types.entity,
    uuid,
    title: facts.title,
    deleted_at: facts.deletedAt,
    [TRASH.purgeAt]: facts.purgeAt,
    [TRASH.purgeMicros]: facts.purgeMicros,
    [TRASH.object]: stored.entity,
    // The version the deletion gave the entity: a restore writes the next one.
    [ATTR.version]: stored.version + 1,
  };
}

/** A trash item as stored. */
export function trashedOf<E>(item: Record<string, unknown>): Trashed<E> {
  return {
    entity: item[TRASH.object] as E,
    version: Number(item[ATTR.version]),
    type: String(item[TRASH.type]),
    uuid: String(item.uuid),
    title: String(item.title),
    deletedAt: String(item.deleted_at),
    purgeAt: String(item[TRASH.purgeAt]),
    purgeMicros: Number(item[TRASH.purgeMicros]),
  };
}

/** Every index item an entity has, by key (what a deletion removes, and what the purge removes again). */
export function indexItemsOf<E>(index: Index<E>, accountId: string, entity: E): Record<string, unknown>[] {
  const items = entityItems(index, accountId, entity);
  return [
    ...items.boundedPostings,
    ...items.sortedPostings,
    ...items.unbounded.map((u) => u.posting),
    ...(items.numberTerm ? [items.numberTerm] : []),
    ...items.prefixTerms,
  ];
}

/**
 * A deletion's commit, guarded by the version read (StaleVersion otherwise): the entity item deleted, the trash
 * item put, and every index item, block key, count, counter and sum the entity had taken out of the index. The
 * search terms that do not fit are marked before it and deleted after it (WritePlan.removedAround).
 */
export function planDelete<E extends { uuid: string }>(
  index: Index<E>,
  accountId: string,
  stored: Versioned<E>,
  facts: TrashFacts,
  options: WriteOptions = {},
): WritePlan {
  const { entity, version } = stored;
  const items: EntityItems = entityItems(index, accountId, entity);
  const shard = index.declaration.order(entity).number % COUNTER_SHARDS;
  const stats = statsActions(
    index,
    accountId,
    items.statsAdds.map(([attribute, amount]) => [attribute, negateDecimal(amount)]),
    shard,
  );
  const fixed: CommitAction[] = [
    {
      what: index.types.entity,
      action: {
        Delete: {
          TableName: tableName(),
          Key: index.keys.item(accountId, index.orderKeyOf(entity)),
          ...versionGuard(version),
        },
      },
      refused: () => new StaleVersion(),
    },
    {
      what: 'trash',
      action: {
        Put: {
          TableName: tableName(),
          Item: trashItem(index, accountId, stored, facts),
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    },
    ...stats,
    ...items.unbounded.map((u) => addToCounter(index.keys.counter(accountId, u.dim, shard), -1)),
    ...items.boundedPostings.map((p) => remove('posting', p)),
    ...items.sortedPostings.map((p) => remove('sorted', p)),
    ...items.unbounded.map((u) => remove('posting', u.posting)),
    ...items.blocks.map((b): CommitAction => ({ what: 'block', action: { Update: removeFromBlock(b) } })),
    ...(items.numberTerm ? [remove('term', items.numberTerm)] : []),
  ];
  const attached = options.attach ?? [];
  const eventRoom = (options.events?.length ?? 0) * MAX_EVENT_ACTIONS;
  const room = Math.max(0, MAX_TRANSACTION_ITEMS - fixed.length - attached.length - eventRoom);
  return {
    fixed: [...fixed, ...items.prefixTerms.slice(0, room).map((t) => remove('term', t))],
    additions: [],
    attached,
    events: eventsOf(accountId, options),
    removedAround: items.prefixTerms.slice(room),
  };
}

/** A restore found no trash item, or one past its purge time, or another restore took it first. */
export class NotInTrash extends Error {
  constructor() {
    super('The object is not in the trash');
  }
}

/**
 * A restore's commit: the entity as it was deleted, at the next version, and its whole index, as a create writes
 * them; its trash item deleted in the same commit, on condition that it is still the one read and not yet due for
 * purge (NotInTrash otherwise).
 */
export function planRestore<E extends { uuid: string }>(
  index: Index<E>,
  accountId: string,
  trashed: Trashed<E>,
  nowMicros: number,
  options: WriteOptions = {},
): WritePlan {
  const takeOut: CommitAction = {
    what: 'trash',
    action: {
      Delete: {
        TableName: tableName(),
        Key: trashKeys.item(accountId, trashed.uuid),
        ConditionExpression: '#v = :version AND #p > :now',
        ExpressionAttributeNames: { '#v': ATTR.version, '#p': TRASH.purgeMicros },
        ExpressionAttributeValues: { ':version': trashed.version, ':now': nowMicros },
      },
    },
    refused: () => new NotInTrash(),
  };
  const plan = planCreate(index, accountId, trashed.entity, {
    ...options,
    version: trashed.version + 1,
    attach: [takeOut, ...(options.attach ?? [])],
  });
  return plan;
}

/**
 * Makes a trash item unrestorable before an erasure purges what it holds: its purge time set to 0 (a restore's
 * commit holds only while the purge time is ahead, planRestore), and the `purge_at` the trash list shows to the
 * hold's time (a purge due now, as a restore's 404 says), on the condition that it is still the one read (its
 * version). False when it is not (restored, or deleted again since): the caller reads again. Its purge due entry
 * stays where it was (the purge runner finds it then, as due: purgeOne purges an item whose time passed).
 */
export async function makeUnrestorable(accountId: string, trashed: Trashed<unknown>): Promise<boolean> {
  if (trashed.purgeMicros === 0) return true;
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: trashKeys.item(accountId, trashed.uuid),
        UpdateExpression: 'SET #p = :zero, #at = :now',
        ConditionExpression: '#v = :version',
        ExpressionAttributeNames: { '#v': ATTR.version, '#p': TRASH.purgeMicros, '#at': TRASH.purgeAt },
        ExpressionAttributeValues: {
          ':version': trashed.version,
          ':zero': 0,
          ':now': formatTimestamp(nowMicros()),
        },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}
