import { batchGetAll } from '../store/client.ts';
import { ATTR, entityOf } from '../store/items.ts';
import type { Index } from './items.ts';
import { keyedTerm } from './keyed.ts';
import { pendingIds } from './pending.ts';

/**
 * Which index items read count: an unmarked item was written in its entity's commit (and is removed in the commit
 * that removes it); a marked one (`u`) was written before its entity's commit, and counts once it is known to have
 * committed (pending.ts) or, when that is unsure, once its entity is read and holds it.
 */

/**
 * Order keys whose entity lists them: unmarked keys do, since they were written in their entity's commit (and
 * are removed in the commit that removes them); marked keys (written before their entity's commit) are kept
 * only when their entity exists and holds that dimension or term now (one BatchGet of those entities, rare).
 */
export async function confirmed<E>(
  index: Index<E>,
  accountId: string,
  keys: MarkedKey[],
  holds: (entityItem: Record<string, unknown>) => boolean,
): Promise<string[]> {
  const unsure = await unsureOf(index, accountId, keys);
  const checked = keys.filter(unsure);
  if (checked.length === 0) return keys.map((k) => k.orderKey);
  const found = await batchGetAll(checked.map((k) => index.keys.item(accountId, k.orderKey)));
  const live = new Set(found.filter(holds).map((item) => item.sk as string));
  return keys.filter((k) => !unsure(k) || live.has(k.orderKey)).map((k) => k.orderKey);
}

/** An order key as an index item names it, and that item's mark (`u`: 1, a create's pending id, or none). */
export interface MarkedKey {
  orderKey: string;
  mark: unknown;
}
export const markedKey = (orderKey: string, item: Record<string, unknown>): MarkedKey => ({
  orderKey,
  mark: item[ATTR.unconfirmed],
});

/**
 * Which marked keys need their entity read to know whether it holds them: those marked 1, and those marked with
 * the pending id of a create whose pending item is still there, read after the keys were (pending.ts).
 */
async function unsureOf<E>(
  index: Index<E>,
  accountId: string,
  keys: MarkedKey[],
): Promise<(key: MarkedKey) => boolean> {
  const pending = keys.some((k) => typeof k.mark === 'string')
    ? await pendingIds(index, accountId)
    : new Set<string>();
  return (k) => k.mark !== undefined && (typeof k.mark !== 'string' || pending.has(k.mark));
}

export const holdsDimension =
  <E>(index: Index<E>, accountId: string, dim: string) =>
  (item: Record<string, unknown>) =>
    index.dimensionsOf(accountId, entityOf<E>(item)).includes(dim);
/**
 * Whether an entity's terms, as its texts give them now (IndexDeclaration.search), hold the term a key names
 * (keyedTerm). Items written before issue 40 keep them as written too (`t`); both agree.
 */
const holdsTerm =
  <E>(index: Index<E>, accountId: string, keyed: string) =>
  (item: Record<string, unknown>) =>
    index.termsOf(entityOf<E>(item)).prefixes.some((t) => keyedTerm(accountId, t) === keyed);

/**
 * Which of a search word's matched terms count (each checked against its entity when unsure, read once): a prefix
 * term (`term`) when the entity's texts give it, a number's term (no `term`) when the entity exists.
 */
export async function confirmedTerms<E>(
  index: Index<E>,
  accountId: string,
  matched: (MarkedKey & { term: string | undefined })[],
): Promise<string[]> {
  const unsure = await unsureOf(index, accountId, matched);
  const checked = matched.filter(unsure);
  const read =
    checked.length === 0 ? [] : await batchGetAll(unique(checked).map((k) => index.keys.item(accountId, k)));
  const entities = new Map(read.map((item) => [item.sk as string, item] as const));
  return matched
    .filter((k) => {
      if (!unsure(k)) return true;
      const entity = entities.get(k.orderKey);
      return entity !== undefined && (k.term === undefined || holdsTerm(index, accountId, k.term)(entity));
    })
    .map((k) => k.orderKey);
}

const unique = (keys: MarkedKey[]) => [...new Set(keys.map((k) => k.orderKey))];
