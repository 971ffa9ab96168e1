import type { Index } from './items.ts';
import { getByOrderKeys } from './reads.ts';

/**
 * Lists read from several partitions at once (a ticket status's, from its queue's four: dimensions.ts,
 * postingSources). The partitions are read at slightly different moments, so a ticket moving between two of them
 * meanwhile (its priority changed) may be in both reads, or in neither: each key is kept once, and a page is read
 * again to find what the first read missed.
 */

/** The keys of several reads of postings, each once, newest first, at most `limit`. */
export const newestOnce = (reads: string[][], limit?: number): string[] =>
  [...new Set(reads.flat())].sort().reverse().slice(0, limit);

/** How a list's keys are merged (each entity once, in the list's order) and which entity each names. */
export interface ListOrder {
  merge(reads: string[][]): string[];
  orderKeyOf(key: string): string;
}

/** Postings: order keys, newest first. */
export const NEWEST_FIRST: ListOrder = { merge: (reads) => newestOnce(reads), orderKeyOf: (key) => key };

/** Postings: order keys, oldest first (a finder's). */
export const OLDEST_FIRST: ListOrder = {
  merge: (reads) => [...new Set(reads.flat())].sort(),
  orderKeyOf: (key) => key,
};

/**
 * Every key a read gives where no page's entities are read beside it (a finder's page, a dimension's every key):
 * from several partitions, read twice, one read after the other, and merged (a round trip more, only there).
 */
export async function confirmedKeys(
  partitions: number,
  read: () => Promise<string[]>,
  order: ListOrder = NEWEST_FIRST,
  readAgain: () => Promise<string[]> = read,
): Promise<string[]> {
  const first = await read();
  return partitions > 1 ? order.merge([first, await readAgain()]) : first;
}

/**
 * The page's entities. From several partitions, they are read again beside the page's entities, all after the
 * first read ended, so a ticket that stayed in the list while moving between two of them once is in one of the two
 * reads; a key the second adds to the page costs one more read (then only). From one partition, one read: a ticket
 * staying in the list keeps its posting there.
 */
export async function confirmedPage<E>(
  ix: Index<E>,
  accountId: string,
  page: { keys: string[]; offset: number; limit: number; partitions: number },
  readAgain: () => Promise<string[]>,
  order: ListOrder = NEWEST_FIRST,
): Promise<E[]> {
  const { keys, offset, limit } = page;
  const first = keys.slice(offset, offset + limit);
  const entitiesOf = (ks: string[]) => getByOrderKeys(ix, accountId, ks.map(order.orderKeyOf));
  if (page.partitions <= 1) return entitiesOf(first);
  const [entities, again] = await Promise.all([entitiesOf(first), readAgain()]);
  const confirmed = order.merge([keys, again]).slice(offset, offset + limit);
  if (confirmed.length === first.length && confirmed.every((k, i) => k === first[i])) return entities;
  const read = new Map(entities.map((e) => [ix.orderKeyOf(e), e]));
  const wanted = confirmed.map(order.orderKeyOf);
  for (const e of await entitiesOf(confirmed.filter((_, i) => !read.has(wanted[i] as string))))
    read.set(ix.orderKeyOf(e), e);
  return wanted.flatMap((k) => {
    const e = read.get(k);
    return e ? [e] : [];
  });
}
