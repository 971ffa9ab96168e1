import { randomInt } from 'node:crypto';
import { COUNTER_SHARDS } from '../keys.ts';
import { UpdateTooLarge } from '../store/errors.ts';
import type { Versioned } from '../store/items.ts';
import { type CellReading, closeCell, readCellAttribute } from './closed-cells.ts';
import { type EntityChange, planCreate, planUpdate, type WriteOptions } from './commit.ts';
import type { IndexDeclaration } from './declaration.ts';
import { type DueCursors, dueEntityWindow } from './due.ts';
import { defineIndex, entityItems, type Index } from './items.ts';
import { findPage, type PageQuery } from './list.ts';
import { mergedFits, mergePlans } from './merge-plans.ts';
import { dropPosting, type ListedPage, oldestListed } from './oldest.ts';
import { getByNumber, getByUuid, getStored, getStoredMany } from './reads.ts';
import { reindexAccount } from './reindex/account.ts';
import type { ReindexOptions } from './reindex/run.ts';
import { getDimensionCounts, getStats, getStatsCell, getStatsCells } from './stats-reads.ts';
import { planDelete, planRestore, type Trashed, type TrashFacts } from './trash.ts';
import { writePlan } from './write-plan.ts';

/**
 * An indexed entity: everything the engine does for an entity, bound to its declaration. Tickets are one
 * (lib/data/tickets/ticket-index.ts); any entity with a uuid, a creation time and a per-account number can be another,
 * with exact lists and totals, versioned updates and a reindex, by declaring its dimensions.
 */
export function indexedEntity<E extends { uuid: string }, F>(declaration: IndexDeclaration<E, F>) {
  const index = defineIndex(declaration);
  return {
    index,
    /** The items a create writes (the reindex and the benchmark's bulk loader write these too). */
    items: (accountId: string, entity: E, version = 1) => entityItems(index, accountId, entity, version),
    /** What a create writes, to be written with writePlan (alone, or combined with another entity's). */
    planCreate: (accountId: string, entity: E, options?: WriteOptions) =>
      planCreate(index, accountId, entity, options),
    /** What an update writes, guarded by the version read (the new version is change.version + 1). */
    planUpdate: (accountId: string, change: EntityChange<E>, options?: WriteOptions) =>
      planUpdate(index, accountId, change, options),
    /** Writes a new entity and its whole index, all or nothing. */
    create: (accountId: string, entity: E, options?: WriteOptions) =>
      writePlan(planCreate(index, accountId, entity, options)),
    /** Writes a change guarded by the version read; answers the new version. */
    update: async (accountId: string, change: EntityChange<E>, options?: WriteOptions): Promise<number> => {
      await writePlan(planUpdate(index, accountId, change, options));
      return change.version + 1;
    },
    /**
     * Writes changes of several entities in one commit (merge-plans.ts), each guarded by its version read, the
     * items they share written once on one shard; sent once (a conflict: ConcurrentWrite). UpdateTooLarge, nothing
     * written, when they do not fit one transaction whole (fitTogether says how many do).
     */
    updateTogether: async (accountId: string, changes: PlannedChange<E>[]): Promise<void> => {
      const plan = mergePlans(plansOf(index, accountId, changes, randomInt(COUNTER_SHARDS)));
      if (!mergedFits(plan)) throw new UpdateTooLarge();
      await writePlan(plan, { once: true });
    },
    /** How many of these changes, first to last, fit one commit of updateTogether (0: not even the first). */
    fitTogether: (accountId: string, changes: PlannedChange<E>[]): number => {
      const plans = plansOf(index, accountId, changes, 0);
      let fit = 0;
      while (fit < plans.length && mergedFits(mergePlans(plans.slice(0, fit + 1)))) fit++;
      return fit;
    },
    /**
     * What a deletion writes (trash.ts): the entity moved to the trash and out of every list, count and sum,
     * guarded by the version read.
     */
    planDelete: (accountId: string, stored: Versioned<E>, facts: TrashFacts, options?: WriteOptions) =>
      planDelete(index, accountId, stored, facts, options),
    /** What a restore writes: the entity as it was deleted, and its index, back; its trash item out. */
    planRestore: (accountId: string, trashed: Trashed<E>, nowMicros: number, options?: WriteOptions) =>
      planRestore(index, accountId, trashed, nowMicros, options),
    getByUuid: (accountId: string, uuid: string) => getByUuid(index, accountId, uuid),
    getByNumber: (accountId: string, number: number) => getByNumber(index, accountId, number),
    /** The entity an order key names (a due entry's), as stored, with its version (one strongly consistent GetItem). */
    getByOrderKey: (accountId: string, orderKey: string) => getStored(index, accountId, orderKey),
    /** The entities of a runner's due window, as stored, in its order (one strongly consistent BatchGetItem a hundred). */
    getManyByOrderKeys: (refs: readonly { accountId: string; orderKey: string }[]) =>
      getStoredMany(index, refs),
    /**
     * Entities whose due entry (IndexDeclaration.due) is at or before `nowMs`, earliest first: a runner's window
     * (due.ts, dueWindow), a page a shard from where its last one ended.
     */
    dueWindow: (nowMs: number, shards: readonly number[], cursors: DueCursors, perShard?: number) =>
      dueEntityWindow(index, nowMs, shards, cursors, perShard),
    findPage: (accountId: string, query: PageQuery<F>) => findPage(index, accountId, query),
    /**
     * A dimension's entities oldest first, a page of its postings as written with the entity each names (oldest.ts:
     * the finder of a caller that takes each out of it, as an erasure does).
     */
    oldestListed: (accountId: string, dim: string, page: ListedPage) =>
      oldestListed(index, accountId, dim, page),
    /** Deletes a posting no entity holds (a failed create's orphan: oldestListed found it). */
    dropPosting: (accountId: string, dim: string, at: string) => dropPosting(index, accountId, dim, at),
    /** The stats cells summed (every family, or these). */
    stats: (accountId: string, families?: string[]) => getStats(index, accountId, families),
    /** One stats cell summed (a family's cell of one value: an agent's). */
    statsCell: (accountId: string, family: string, value: string) =>
      getStatsCell(index, accountId, family, value),
    /** One attribute of its stats cell, shard by shard, to close the cell on (closed-cells.ts). */
    readCellAttribute: (accountId: string, attribute: string) =>
      readCellAttribute(index, accountId, attribute),
    /** A commit's part that closes a cell as read: every shard unchanged since, and marked closed. */
    closeCell: (accountId: string, reading: CellReading, refused: () => Error) =>
      closeCell(index, accountId, reading, refused),
    /** Cells of an unsharded family by their values, summed (one BatchGetItem: a page of agents' cells). */
    statsCells: (accountId: string, family: string, values: string[]) =>
      getStatsCells(index, accountId, family, values),
    counts: (accountId: string, dimensions: string[]) => getDimensionCounts(index, accountId, dimensions),
    /**
     * Rebuilds the account's index from its entities as stored, page by page, continuing a run that stopped
     * (maintenance, docs/data-model.md "Reindex").
     */
    rebuild: (accountId: string, options?: ReindexOptions) => reindexAccount(index, accountId, options),
  };
}

/** A change and its options (events, closed cells), as updateTogether takes them. */
export interface PlannedChange<E> {
  change: EntityChange<E>;
  options?: WriteOptions;
}

const plansOf = <E>(index: Index<E>, accountId: string, changes: PlannedChange<E>[], shard: number) =>
  changes.map(({ change, options }) => planUpdate(index, accountId, change, { ...options, shard }));

export type IndexedEntity<E extends { uuid: string }, F> = ReturnType<typeof indexedEntity<E, F>>;
