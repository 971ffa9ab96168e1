import type { Ticket } from '#lib/tickets/types.ts';
import { batchDeleteAll, batchPutAll, queryAll, scanAll, tableName } from './client.ts';
import { entityOf } from './items.ts';
import { ticketKeys } from './keys.ts';
import { BLOCK_KEYS, type TicketWrite, ticketItems } from './tickets.ts';

/**
 * Rebuilds an account's ticket index from its tickets: every posting, term, counter, block and the stats item
 * become exactly what creating the tickets as they are now would have written, and index items no ticket
 * accounts for are deleted. For tables written before an index existed (the queues, the blocks) and for
 * repairing drift. It is a maintenance step, not a concurrent one: the account must take no ticket writes
 * while it runs (docs/data-model.md, "Reindex").
 */
export async function rebuildTicketIndex(
  accountId: string,
  writes: Omit<TicketWrite, 'busyCondition' | 'receipt'>[],
): Promise<{ written: number; removed: number }> {
  const keyOf = (item: Record<string, unknown>) => `${item.pk}\u0000${item.sk}`;
  const desired = new Map<string, Record<string, unknown>>();
  const counters = new Map<string, { key: { pk: string; sk: string }; n: number }>();
  const blocks = new Map<string, { key: { pk: string; sk: string }; packed: Set<string> }>();
  const stats = new Map<string, number>();
  for (const write of writes) {
    const items = ticketItems(write);
    for (const item of [
      ...items.boundedPostings,
      ...items.unbounded.map((u) => u.posting),
      items.numberTerm,
      ...items.prefixTerms,
    ]) {
      desired.set(keyOf(item), item);
    }
    for (const { counterKey } of items.unbounded) {
      const entry = counters.get(keyOf(counterKey)) ?? { key: counterKey, n: 0 };
      counters.set(keyOf(counterKey), { ...entry, n: entry.n + 1 });
    }
    for (const { key, packed } of items.blocks) {
      const entry = blocks.get(keyOf(key)) ?? { key, packed: new Set<string>() };
      blocks.set(keyOf(key), { ...entry, packed: entry.packed.add(packed) });
    }
    for (const attribute of items.statsIncrements) stats.set(attribute, (stats.get(attribute) ?? 0) + 1);
  }
  for (const { key, n } of counters.values()) desired.set(keyOf(key), { ...key, n });
  for (const { key, packed } of blocks.values()) desired.set(keyOf(key), { ...key, [BLOCK_KEYS]: packed });

  const stale = (await indexKeysOf(accountId)).filter((key) => !desired.has(keyOf(key)));
  await batchDeleteAll(stale);
  await batchPutAll([{ ...ticketKeys.stats(accountId), ...Object.fromEntries(stats) }, ...desired.values()]);
  return { written: desired.size + 1, removed: stale.length };
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
