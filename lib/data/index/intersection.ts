import type { DeferredMarks } from './confirmed.ts';
import { ALL, type IndexDeclaration } from './declaration.ts';
import { hasBlocks, queueParts } from './dimensions.ts';
import { planIntersection, planWithinBudget } from './intersection-plan.ts';
import type { Index } from './items.ts';
import { packOrderKey, unpackOrderKey } from './order-key.ts';
import { postingsAmong, queryBlocks, queryPostings } from './order-key-reads.ts';
import { getDimensionCounts } from './stats-reads.ts';
import { queryTerm } from './term-reads.ts';

/**
 * The packed keys of every entity that several dimensions, or search words, name. The counters (beside the words'
 * term keys) name an empty dimension, which ends it, and the smallest. The driver (the words, or else the smallest
 * dimension) gives the candidates; a larger dimension's blocks are read whole (beside the driver) when that costs
 * less than asking for each candidate's posting by key, which it does unless the candidates are few against it.
 * Keys are intersected packed (as the blocks hold them), reading at most `budget` keys (list.ts, listReadBudget).
 * A queue keeps no blocks (dimensions.ts, hasBlocks): its parts are intersected instead; a narrow unbounded value
 * (a requester's address) keeps none either: its postings are read instead (wholeKeys).
 */
export async function intersectKeys<E>(
  ix: Index<E>,
  accountId: string,
  named: string[],
  words: string[],
  budget: number,
  deferred?: DeferredMarks,
): Promise<string[]> {
  const declaration = ix.declaration as IndexDeclaration<E, unknown>;
  const dims = [...new Set(named.flatMap((d) => queueParts(declaration, d)))];
  // The keys the words' sample probes read (term-reads.ts): out of the budget too.
  const probed = { keys: 0 };
  const [counts, termSets] = await Promise.all([
    dims.length > 0 ? getDimensionCounts(ix, accountId, [ALL, ...dims]) : {},
    // The budget is shared evenly by the words, each refused when its own share runs out.
    Promise.all(
      words.map((w) => wordKeys(ix, accountId, w, Math.floor(budget / words.length), deferred, probed)),
    ),
  ]);
  const size = (d: string) => (counts as Record<string, number>)[d] ?? 0;
  if (dims.some((d) => size(d) === 0)) return [];
  const wordCandidates = words.length > 0 ? Math.min(...termSets.map((t) => t.size)) : undefined;
  const sizes = dims.map((d) => ({
    dim: d,
    size: size(d),
    sources: ix.postingSources(accountId, d).length,
    blocks: hasBlocks(declaration, d),
  }));
  // The words' keys are read: what is left of the budget bounds the dimensions' keys, before any is read.
  const wordKeysRead = termSets.reduce((n, t) => n + t.size, probed.keys);
  const plan = planWithinBudget(
    planIntersection(sizes, size(ALL), wordCandidates),
    sizes,
    wordCandidates,
    budget - wordKeysRead,
  );
  const wholeSets = new Map(
    await Promise.all(
      [...(plan.driver ? [plan.driver] : []), ...plan.whole].map(
        async (d) => [d, await wholeKeys(ix, accountId, d, deferred)] as const,
      ),
    ),
  );
  let keys = intersect(plan.driver ? [wholeSets.get(plan.driver) as Set<string>] : termSets);
  const found = await Promise.all(
    plan.byKey.map(async (d) =>
      keys.length > 0
        ? packedSet(await postingsAmong(ix, accountId, d, keys.map(unpackOrderKey), deferred))
        : new Set<string>(),
    ),
  );
  const sets = [...plan.whole.map((d) => wholeSets.get(d) as Set<string>), ...found];
  keys = keys.filter((k) => sets.every((set) => set.has(k)));
  return keys;
}

/**
 * Packed keys of the entities a word matches: its terms, and the dimensions the declaration relates to it, the
 * two reads sharing the word's budget.
 */
async function wordKeys<E>(
  index: Index<E>,
  accountId: string,
  word: string,
  budget: number,
  deferred?: DeferredMarks,
  probed?: { keys: number },
): Promise<Set<string>> {
  const { searchRelated } = index.declaration;
  const share = searchRelated ? Math.floor(budget / 2) : budget;
  const [terms, related] = await Promise.all([
    queryTerm(index, accountId, word, share, deferred, probed),
    searchRelated?.(accountId, word, share, probed) ?? [],
  ]);
  const keys = packedSet(terms);
  for (const set of await Promise.all(related.map((d) => wholeKeys(index, accountId, d, deferred)))) {
    for (const k of set) keys.add(k);
  }
  return keys;
}

/**
 * Every packed key a dimension lists: from its blocks, or, for one that keeps none (an unbounded value:
 * dimensions.ts, hasBlocks), from its postings read whole.
 */
async function wholeKeys<E>(
  index: Index<E>,
  accountId: string,
  dim: string,
  deferred?: DeferredMarks,
): Promise<Set<string>> {
  if (hasBlocks(index.declaration as IndexDeclaration<E, unknown>, dim))
    return queryBlocks(index, accountId, dim, deferred);
  return packedSet(await queryPostings(index, accountId, dim, undefined, undefined, undefined, deferred));
}

function packedSet(orderKeys: Iterable<string>): Set<string> {
  const packed = new Set<string>();
  for (const k of orderKeys) packed.add(packOrderKey(k));
  return packed;
}

function intersect(sets: Set<string>[]): string[] {
  const [smallest, ...rest] = [...sets].sort((a, b) => a.size - b.size);
  return [...(smallest ?? [])].filter((k) => rest.every((s) => s.has(k)));
}
