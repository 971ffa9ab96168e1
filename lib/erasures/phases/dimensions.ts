import { clearLeftDimensions } from '#lib/data/index/empty-dimensions.ts';
import { type Move, next, stepSize } from '../move.ts';

/**
 * Phase `dimensions`: what the dimensions the rewrites took the person's objects out of leave once empty (their
 * counters, blocks and directory entries, keyed by a hash of a value that named the person), a page of notes a
 * move.
 */
export async function dimensions({ accountId, record, p, options, count, worked }: Move): Promise<undefined> {
  const { removed, more } = await clearLeftDimensions(accountId, record.id, stepSize(options));
  count('index', removed);
  worked(stepSize(options));
  if (!more) next(p, 'leftovers');
}
