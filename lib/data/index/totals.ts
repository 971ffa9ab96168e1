import { NumberValue } from '@aws-sdk/lib-dynamodb';
import { addDecimal } from '#lib/decimal.ts';
import { ATTR, type ItemKey, keyString } from '../store/items.ts';
import type { EntityItems, Index } from './items.ts';

/** A block item as a create's commits leave it: its packed keys, none marked. */
export const blockItem = (key: ItemKey, packed: Set<string>) => ({ ...key, [ATTR.blockKeys]: packed });

/**
 * What the commits of many entities add up to in their shared index items: each counter's count, each block's
 * packed keys and each stats cell's counts and sums, as whole items to put (a sharded counter's or cell's total
 * in its shard 0). The benchmark's bulk loader writes an entity's
 * own items as entityItems gives them, and these totals once; the reindex keeps them a page at a time (the stats
 * sums carried from page to page in its progress item, block keys added to their blocks, counters counted from
 * the postings).
 */
export class IndexTotals<E> {
  private readonly counters = new Map<string, { dim: string; n: number }>();
  private readonly blocks = new Map<string, { key: ItemKey; packed: Set<string> }>();
  private readonly stats: Map<string, string>;

  constructor(
    private readonly index: Index<E>,
    private readonly accountId: string,
    /** Sums carried from earlier pages (statsSums of an earlier IndexTotals). */
    stats: Record<string, string> = {},
  ) {
    this.stats = new Map(Object.entries(stats));
  }

  add(items: EntityItems): void {
    for (const { dim } of items.unbounded) {
      this.counters.set(dim, { dim, n: (this.counters.get(dim)?.n ?? 0) + 1 });
    }
    for (const { key, packed } of items.blocks) {
      const entry = this.blocks.get(keyString(key)) ?? { key, packed: new Set<string>() };
      this.blocks.set(keyString(key), { key, packed: entry.packed.add(packed) });
    }
    for (const [attribute, amount] of items.statsAdds) {
      this.stats.set(attribute, addDecimal(this.stats.get(attribute) ?? '0', amount));
    }
  }

  /**
   * The stats cells: each cell's totals in one item (a sharded cell's in its shard 0, the other shards left
   * to be deleted: a total is the sum of whatever shards exist).
   */
  statsItems(): Record<string, unknown>[] {
    const cells = new Map<string, Record<string, unknown>>();
    for (const [attribute, sum] of this.stats) {
      const { family, value } = this.index.statsCellOf(attribute);
      const key = this.index.keys.statsCell(
        this.accountId,
        family.family,
        value,
        family.sharded ? 0 : undefined,
      );
      const item = cells.get(keyString(key)) ?? { ...key };
      item[attribute] = NumberValue.from(sum);
      cells.set(keyString(key), item);
    }
    return [...cells.values()];
  }

  /** The stats item's sums so far, as exact decimal strings (carried from page to page). */
  statsSums(): Record<string, string> {
    return Object.fromEntries(this.stats);
  }

  /** Each unbounded dimension's counter, its total in shard 0. */
  counterItems(): Record<string, unknown>[] {
    return [...this.counters.values()].map(({ dim, n }) => ({
      ...this.index.keys.counter(this.accountId, dim, 0),
      [ATTR.count]: n,
    }));
  }

  /** Every block, or those of these keys (keyString of a block's key). */
  blockItems(only?: Set<string>): Record<string, unknown>[] {
    return [...this.blocks]
      .filter(([k]) => only === undefined || only.has(k))
      .map(([, { key, packed }]) => blockItem(key, packed));
  }

  /** Each block's packed keys, to be added to what the block holds (the reindex, a page at a time). */
  blockAdditions(): { key: ItemKey; packed: Set<string> }[] {
    return [...this.blocks.values()];
  }
}
