import type { CheckedPage, DeferredMarks } from './confirmed.ts';
import type { IndexDeclaration } from './declaration.ts';
import { queueParts } from './dimensions.ts';
import type { Index } from './items.ts';
import { keyedTerm } from './keyed.ts';
import { getByOrderKeys } from './reads.ts';

/**
 * The most keys a page of an intersection checks one by one when creates under way (or failed) put marks it
 * counted; past it, the page is read again as a whole (readCheckingMarks).
 */
const CHECKED_ONE_BY_ONE = 100;

/**
 * A page of intersected keys (newest first), read with `deferred`: its entities beside the account's pending items
 * and, where a key it lists was counted by a mark still pending (a create under way, or one that failed), only
 * those keys checked: their entities read (with the keys the page may move onto, one BatchGet), each kept when its
 * entity is there and holds every dimension and word the page asks for. A marked item is an entity's addition only
 * (a deletion's removals are checked always), so the deferred read can only have counted too many: none is missing.
 * It used to read the whole page again, each marked item checked as it was met (`search=plum&status=open`: 7 round
 * trips more, test/api/pending-creates-reads.test.ts); now one.
 * Too many such keys (CHECKED_ONE_BY_ONE), a mark counted after the pending items were read, or words that also
 * match related entities (a deal's contacts: searchRelated), and the page is read again as before.
 */
export async function intersectedPage<E>(
  ix: Index<E>,
  accountId: string,
  asked: { dims: string[]; words: string[]; offset: number; limit: number },
  keys: string[],
  deferred?: DeferredMarks,
): Promise<CheckedPage<E>> {
  const { offset, limit } = asked;
  const [entities, pending] = await Promise.all([
    getByOrderKeys(ix, accountId, keys.slice(offset, offset + limit)),
    deferred?.pending(ix, accountId),
  ]);
  const page = { total: keys.length, entities };
  const unsure = pending && deferred?.pendingAmong(pending, keys);
  if (!deferred || unsure?.length === 0) return { page, recheck: false };
  const related = asked.words.length > 0 && ix.declaration.searchRelated !== undefined;
  if (!unsure || unsure.length > CHECKED_ONE_BY_ONE || related) return { page, recheck: true };

  const byKey = new Map(entities.map((e) => [ix.orderKeyOf(e), e]));
  const toRead = [...new Set([...unsure, ...keys.slice(offset, offset + limit + unsure.length)])];
  for (const e of await getByOrderKeys(
    ix,
    accountId,
    toRead.filter((k) => !byKey.has(k)),
  )) {
    byKey.set(ix.orderKeyOf(e), e);
  }
  const holds = holdsAll(ix, accountId, asked);
  const dropped = new Set(unsure.filter((k) => !byKey.has(k) || !holds(byKey.get(k) as E)));
  const kept = keys.filter((k) => !dropped.has(k));
  const listed = kept.slice(offset, offset + limit).flatMap((k) => byKey.get(k) ?? []);
  return { page: { total: kept.length, entities: listed }, recheck: false };
}

/** Whether an entity holds every dimension (each part of a queue) and matches every word a page asks for. */
function holdsAll<E>(ix: Index<E>, accountId: string, asked: { dims: string[]; words: string[] }) {
  const declaration = ix.declaration as IndexDeclaration<E, unknown>;
  const parts = [...new Set(asked.dims.flatMap((d) => queueParts(declaration, d)))];
  const words = asked.words.map((w) => ({
    keyed: keyedTerm(accountId, w),
    number: /^\d+$/.test(w) ? Number(w) : NaN,
  }));
  return (entity: E) => {
    const dims = new Set(ix.dimensionsOf(accountId, entity));
    if (!parts.every((d) => dims.has(d))) return false;
    const terms = ix.termsOf(entity);
    const keyed = terms.prefixes.map((t) => keyedTerm(accountId, t));
    return words.every((w) => keyed.some((t) => t.startsWith(w.keyed)) || Number(terms.number) === w.number);
  };
}
