import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { nowMillis } from '#lib/time.ts';
import { batchGetAll, dynamo, getItem, tableName } from '../../store/client.ts';
import { entityOf, type ItemKey } from '../../store/items.ts';
import type { Index } from '../items.ts';

/**
 * One run of the reindex (account.ts): what it keeps in its progress item between pages (its phase and cursor,
 * what it counted so far), saved after every page so that a run that stops is continued by running it again, and
 * what every phase shares (the account's entities read a page at a time, the bound on what is held).
 */

export interface ReindexOptions {
  /** Entities (or index keys) read and held at a time: the bound on the reindex's memory. */
  pageSize?: number;
}

export interface ReindexResult {
  entities: number;
  written: number;
  /** Index items no entity accounts for, deleted. */
  removed: number;
  /**
   * Shards folded: counter shards and stats cell shards deleted once their total was put in shard 0 (and counters
   * and cells no entity counts in any more).
   */
  folded: number;
  /** Blocks whose every key the updates had taken out, deleted. */
  emptied: number;
  /** The run continued one that had stopped. */
  resumed: boolean;
  /** The most entities this run held in memory at once (never more than the page size). */
  peakHeld: number;
}

export const REINDEX_PAGE_SIZE = 100;
/**
 * The progress item is put at every phase's start and end and, between, after the first page done more than this
 * long after the last put: a run that stops repeats at most this much work (every step may be repeated).
 */
const SAVE_EVERY_MS = 1_000;

export type Phase = 'build' | 'stats' | 'sweep' | 'terms';

/** sweep: the dimension under way, the part of it, the last key done there, and what it counted so far. */
export interface DimensionProgress {
  name: string;
  part: 'postings' | 'blocks' | 'sorted';
  /** part `sorted`: the sort under way (IndexDeclaration.sorts, in name order). */
  sort?: string;
  after?: string;
  count: number;
  /** The counter's items as found: each shard's sort key (and an earlier release's `#COUNT`) and count. */
  counter?: Record<string, number>;
}

/** What the progress item keeps between pages. */
export interface Progress {
  phase: Phase;
  /**
   * build: the last order key done; stats: the last family done; sweep: the last dimension done; terms: the
   * last term done.
   */
  after?: string | undefined;
  dimension?: DimensionProgress;
  /** What the entities done so far add to the stats cells' attributes (exact decimals). */
  stats: Record<string, string>;
  entities: number;
  written: number;
  removed: number;
  folded?: number;
  emptied?: number;
}

const PROGRESS_TYPE = 'index_reindex';

/** One run of the reindex of an account's index: its progress, saved as it goes, and what its phases share. */
export class ReindexRun<E> {
  private savedAt = nowMillis();
  private peakHeld = 0;

  private constructor(
    readonly index: Index<E>,
    readonly accountId: string,
    /** Entities (or index keys) read and held at a time. */
    readonly pageSize: number,
    readonly progressKey: ItemKey,
    readonly progress: Progress,
    /** The run continued one that had stopped. */
    readonly resumed: boolean,
  ) {}

  /** The run that the account's progress item left off, or a new one (its progress item put at once). */
  static async open<E>(index: Index<E>, accountId: string, options: ReindexOptions): Promise<ReindexRun<E>> {
    const pageSize = Math.max(1, Math.floor(options.pageSize ?? REINDEX_PAGE_SIZE));
    const progressKey = index.keys.reindexProgress(accountId);
    const stored = await getItem(progressKey);
    const progress: Progress = stored
      ? (JSON.parse(String(stored.progress)) as Progress)
      : { phase: 'build', stats: {}, entities: 0, written: 0, removed: 0, folded: 0, emptied: 0 };
    const run = new ReindexRun(index, accountId, pageSize, progressKey, progress, stored !== undefined);
    if (!run.resumed) await run.save(true);
    return run;
  }

  /** Notes that the run holds `n` entities at once. */
  held(n: number): void {
    this.peakHeld = Math.max(this.peakHeld, n);
  }

  /** Saves the progress: at once (`now`), or when the last save is more than SAVE_EVERY_MS old. */
  async save(now = false): Promise<void> {
    if (!now && nowMillis() - this.savedAt < SAVE_EVERY_MS) return;
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...this.progressKey, type: PROGRESS_TYPE, progress: JSON.stringify(this.progress) },
      }),
    );
    this.savedAt = nowMillis();
  }

  /** The next phase begun, from its start, and saved at once. */
  async begin(phase: Phase): Promise<void> {
    Object.assign(this.progress, { phase, after: undefined });
    await this.save(true);
  }

  /** The account's entities at these order keys (at most a page: the caller chunks), by order key. */
  async entitiesAt(orderKeyList: string[]): Promise<Map<string, E>> {
    const unique = [...new Set(orderKeyList)];
    this.held(unique.length);
    const items = await batchGetAll(unique.map((k) => this.index.keys.item(this.accountId, k)));
    return new Map(items.map((item) => [item.sk as string, entityOf<E>(item)]));
  }

  /** Whether an entity (read or not found) is listed under a dimension now. */
  holds(dimension: string, entity: E | undefined): boolean {
    return entity !== undefined && this.index.dimensionsOf(this.accountId, entity).includes(dimension);
  }

  /** The run done: its progress item deleted, and what it did. */
  async finish(): Promise<ReindexResult> {
    const { progress } = this;
    await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: this.progressKey }));
    return {
      entities: progress.entities,
      written: progress.written,
      removed: progress.removed,
      folded: progress.folded ?? 0,
      emptied: progress.emptied ?? 0,
      resumed: this.resumed,
      peakHeld: this.peakHeld,
    };
  }
}
