import type { Ticket } from '#lib/tickets/types.ts';
import { batchDeleteAll, batchPutAll, queryAll, scanAll, tableName } from './client.ts';
import { entityOf, type ItemKey, keyString } from './items.ts';
import { ticketKeys } from './keys.ts';
import { BLOCK_KEYS, type TicketItems, type TicketWrite, ticketItems } from './tickets.ts';

/**
 * Rebuilds an account's ticket index from its tickets: every posting, term, counter, block and the stats item
 * become exactly what creating the tickets as they are now would have written, and index items no ticket
 * accounts for are deleted. For tables written before an index existed (the queues, the blocks) and for
 * repairing drift. It is a maintenance step, not a concurrent one: the account must take no ticket writes
 * while it runs (docs/data-model.md, "Reindex").
 */
export async function rebuildTicketIndex(
  accountId: string,
  writes: Omit<TicketWrite, 'busyCondition' | 'attachment'>[],
): Promise<{ written: number; removed: number }> {
  const totals = new IndexTotals(accountId);
  const desired = new Map<string, Record<string, unknown>>();
  for (const write of writes) {
    const items = ticketItems(write);
    for (const item of [
      ...items.boundedPostings,
      ...items.unbounded.map((u) => u.posting),
      items.numberTerm,
      ...items.prefixTerms,
    ]) {
      desired.set(keyString(item), item);
    }
    totals.add(items);
  }
  for (const item of [...totals.counterItems(), ...totals.blockItems()]) desired.set(keyString(item), item);

  const stale = (await indexKeysOf(accountId)).filter((key) => !desired.has(keyString(key)));
  await batchDeleteAll(stale);
  await batchPutAll([totals.statsItem(), ...desired.values()]);
  return { written: desired.size + 1, removed: stale.length };
}

/**
 * What the commits of many tickets add up to in their shared index items: each counter's count, each block's
 * packed keys and the stats item's counts, as whole items to put. The reindex and the benchmark's bulk loader
 * write a ticket's own items as ticketItems gives them, and these totals once.
 */
export class IndexTotals {
  private readonly counters = new Map<string, { key: ItemKey; n: number }>();
  private readonly blocks = new Map<string, { key: ItemKey; packed: Set<string> }>();
  private readonly stats = new Map<string, number>();

  constructor(private readonly accountId: string) {}

  add(items: TicketItems): void {
    for (const { counterKey: key } of items.unbounded) {
      const entry = this.counters.get(keyString(key)) ?? { key, n: 0 };
      this.counters.set(keyString(key), { key, n: entry.n + 1 });
    }
    for (const { key, packed } of items.blocks) {
      const entry = this.blocks.get(keyString(key)) ?? { key, packed: new Set<string>() };
      this.blocks.set(keyString(key), { key, packed: entry.packed.add(packed) });
    }
    for (const attribute of items.statsIncrements)
      this.stats.set(attribute, (this.stats.get(attribute) ?? 0) + 1);
  }

  statsItem(): Record<string, unknown> {
    return { ...ticketKeys.stats(this.accountId), ...Object.fromEntries(this.stats) };
  }

  counterItems(): Record<string, unknown>[] {
    return [...this.counters.values()].map(({ key, n }) => ({ ...key, n }));
  }

  /** Every block, or those of these keys (keyString of a block's key). */
  blockItems(only?: Set<string>): Record<string, unknown>[] {
    return [...this.blocks]
      .filter(([k]) => only === undefined || only.has(k))
      .map(([, { key, packed }]) => ({ ...key, [BLOCK_KEYS]: packed }));
  }
}

/** Every ticket of the account, as stored. */
export async function allTickets(accountId: string): Promise<Ticket[]> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': ticketKeys.ticketPartition(accountId) },
    ConsistentRead: true,
  });
  return items.map((item) => entityOf<Ticket>(item));
}

/**
 * The keys of every index item of the account: its terms partition (one Query), and its postings, counters
 * and blocks, which live in a partition per dimension and so are found by one Scan of the table.
 */
async function indexKeysOf(accountId: string): Promise<{ pk: string; sk: string }[]> {
  const [terms, dimensions] = await Promise.all([
    queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': ticketKeys.termsPartition(accountId) },
      ProjectionExpression: 'pk, sk',
      ConsistentRead: true,
    }),
    scanAll({
      TableName: tableName(),
      FilterExpression: 'begins_with(pk, :postings) OR begins_with(pk, :blocks)',
      ExpressionAttributeValues: {
        ':postings': ticketKeys.postingPartition(accountId, ''),
        ':blocks': ticketKeys.blockPartition(accountId, ''),
      },
      ProjectionExpression: 'pk, sk',
      ConsistentRead: true,
    }),
  ]);
  return [...terms, ...dimensions].map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
}
