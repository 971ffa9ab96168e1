import { batchGetAll } from '../store/client.ts';
import { ATTR, entityOf } from '../store/items.ts';
import type { Index } from './items.ts';
import { keyedTerm } from './keyed.ts';
import { orderKeyMark, pendingIds } from './pending.ts';

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
  deferred?: DeferredMarks,
): Promise<string[]> {
  const unsure = await unsureOf(index, accountId, keys, deferred);
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
export async function unsureOf<E>(
  index: Index<E>,
  accountId: string,
  keys: MarkedKey[],
  deferred?: DeferredMarks,
): Promise<(key: MarkedKey) => boolean> {
  const pendingMarks = keys.filter((k) => typeof k.mark === 'string');
  if (deferred) {
    for (const k of pendingMarks) deferred.add(k.orderKey, k.mark as string);
    return (k) => k.mark !== undefined && typeof k.mark !== 'string';
  }
  const pending = pendingMarks.length > 0 ? await pendingIds(index, accountId) : new Set<string>();
  return (k) => k.mark !== undefined && (typeof k.mark !== 'string' || pending.has(k.mark));
}

/**
 * The pending marks a list's reads counted without reading the pending items (`deferred`): the list reads those
 * beside its page's entities, after every key was read, and only if one of them is still there (a create under way
 * or one that failed put an item it counted) reads again with each mark checked as it meets it. So a list costs no
 * round trip more for marked items, and one only where such a create's items are in what it read.
 */
export class DeferredMarks {
  private readonly ids = new Map<string, string[]>();
  /** Whether a read counted block keys a create added before its commit (`p`: marked by their creation time). */
  private blockKeys = false;
  /** The pending items were read: a mark counted since (a read beside them) may have been put after that read. */
  private sealed = false;
  private late = false;

  add(orderKey: string, id: string): void {
    const ids = this.ids.get(orderKey) ?? [];
    if (ids.includes(id)) return;
    // One counted before the pending items were read is known to them; one first counted after, maybe not.
    if (this.sealed) this.late = true;
    this.ids.set(orderKey, [...ids, id]);
  }

  /**
   * A read counted block keys of `p` (pending.ts): each is marked by the creation time its key carries, so none is
   * recorded (a block read may hold thousands); `touches` looks at the keys it is given.
   */
  addBlockKeys(): void {
    if (this.sealed) this.late = true;
    this.blockKeys = true;
  }

  /** The account's pending ids, read now (after the keys), if a read counted a pending mark. */
  pending<E>(index: Index<E>, accountId: string): Promise<Set<string>> {
    this.sealed = true;
    return this.ids.size === 0 && !this.blockKeys ? Promise.resolve(new Set()) : pendingIds(index, accountId);
  }

  /**
   * The order keys among these that were counted by a mark still pending; undefined when a mark may have been
   * counted after the pending items were read (all must be read again).
   */
  pendingAmong(pending: Set<string>, orderKeys: string[]): string[] | undefined {
    if (this.late) return undefined;
    if (pending.size === 0) return [];
    return orderKeys.filter((k) => this.countedPending(pending, k));
  }

  /** Whether a mark still pending counted this order key: an item's pending id, or a `p` block key's mark. */
  private countedPending(pending: Set<string>, orderKey: string): boolean {
    if (this.ids.get(orderKey)?.some((id) => pending.has(id))) return true;
    return this.blockKeys && pending.has(orderKeyMark(orderKey));
  }

  /** Whether one of these order keys (all it counted, without) was counted by a mark still pending. */
  touches(pending: Set<string>, orderKeys?: Iterable<string>): boolean {
    if (this.late) return true;
    if (pending.size === 0) return false;
    // Without the keys it listed, any pending create may have added a block key it counted.
    if (this.blockKeys && orderKeys === undefined) return true;
    for (const k of orderKeys ?? this.ids.keys()) if (this.countedPending(pending, k)) return true;
    return false;
  }
}

/** A page read with deferred marks, and whether one it counted is still pending (so it is read again). */
export type CheckedPage<E> = { page: { total: number; entities: E[] }; recheck: boolean };

/**
 * Reads a page with its marks deferred and, where one it counted is still pending, once more checking each as it
 * meets it (no DeferredMarks): a list's and a sorted list's one way to meet marked items.
 */
export async function readCheckingMarks<E>(
  read: (deferred?: DeferredMarks) => Promise<CheckedPage<E>>,
): Promise<{ total: number; entities: E[] }> {
  const first = await read(new DeferredMarks());
  return first.recheck ? (await read()).page : first.page;
}

/**
 * The end of a page read with `deferred`: its entities read beside the account's pending items (after every key
 * it counted), and whether one of those keys (`keys`; without: all it counted) is a create's still pending.
 */
export const besidePending =
  <E>(index: Index<E>, accountId: string, deferred?: DeferredMarks) =>
  async (total: number, entities: Promise<E[]>, keys?: string[]): Promise<CheckedPage<E>> => {
    const [read, pending] = await Promise.all([entities, deferred?.pending(index, accountId)]);
    return {
      page: { total, entities: read },
      recheck: pending !== undefined && !!deferred?.touches(pending, keys),
    };
  };

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
  deferred?: DeferredMarks,
): Promise<string[]> {
  const unsure = await unsureOf(index, accountId, matched, deferred);
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
