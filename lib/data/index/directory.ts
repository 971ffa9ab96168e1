import { randomBytes } from 'node:crypto';
import { ServiceUnavailable } from '#lib/errors.ts';
import { timeLeftMs } from '#lib/request-scope.ts';
import { withTimeout } from '#lib/time.ts';
import { batchPutAll, tableName } from '../store/client.ts';
import { keyString } from '../store/items.ts';
import type { IndexDeclaration } from './declaration.ts';
import { isKeyedDimension } from './dimensions.ts';
import type { Index } from './items.ts';

/**
 * The account's directory of dimensions (lib/data/keys.ts, `directoryEntry`): an item per dimension whose
 * posting or block partition the index ever wrote. Postings live in a partition per dimension value, so without
 * it an account's index partitions could only be found by a Scan of the whole table; with it the reindex reads
 * one Query of the directory and then only the account's own partitions (docs/data-model.md, "Reindex").
 *
 * A write adds the entries of the dimensions it enters to its own commit (or, if they do not fit, puts them
 * before it, as other additions), so a dimension's entry exists before or with its first item. Each container
 * remembers the entries it has seen written (a bounded LRU): a dimension costs one put per container that writes
 * it first, not one per write (but for the largest writes, which spill anyway: directoryPlan). A keyed dimension
 * (an address, a custom field's value) is the exception the reindex makes (ensureDirectoryEntries).
 */

/** The item type of a directory entry. */
const ENTRY_TYPE = 'index_dimension';
/** Entries remembered per container (about 100 bytes each). */
const REMEMBERED = 20_000;
const remembered = new Map<string, true>();

function remember(key: string): void {
  remembered.delete(key);
  remembered.set(key, true);
  if (remembered.size > REMEMBERED) remembered.delete(remembered.keys().next().value as string);
}

/**
 * An entry as a write puts it: `w`, a token of that write, tells an erasure deleting the entry (it deletes only
 * the one it read: lib/data/erasures.ts, deleteEmptyDimension) that a write put it again meanwhile.
 */
const entryOf = <E>(index: Index<E>, accountId: string, dimension: string) => ({
  ...index.keys.directoryEntry(accountId, dimension),
  type: ENTRY_TYPE,
  w: randomBytes(6).toString('hex'),
});

/**
 * The directory entries a write of these dimensions carries: `fresh`, those this container has not seen written;
 * `all`, every one. A write whose other additions fit its commit carries the fresh ones (in the commit as far as
 * they fit); one whose additions spill anyway carries all of them, with the spilled items: so that what it writes
 * before its commit, and in how many calls, does not depend on what the container wrote before (additions.ts).
 */
export function directoryPlan<E>(index: Index<E>, accountId: string, dimensions: string[]): DirectoryPlan {
  const declaration = index.declaration as IndexDeclaration<E, unknown>;
  const unique = [...new Set(dimensions)];
  const all = unique.map((d) => entryOf(index, accountId, d));
  const plain = new Set(
    all.filter((_, i) => !isKeyedDimension(declaration, unique[i] as string)).map((e) => keyString(e)),
  );
  return { all, fresh: all.filter((entry) => !remembered.has(keyString(entry))), plain };
}

export interface DirectoryPlan {
  all: Record<string, unknown>[];
  fresh: Record<string, unknown>[];
  /**
   * Entries (by key) that need not be in the commit: those of dimensions never deleted (a status, a queue: not
   * keyed). Only the reindex reads the directory, and an entry put before a commit that then fails names a
   * partition the reindex finds empty; so they are put beside the commit's event places, outside the transaction
   * (1 write unit, not 2: issue 40). A keyed dimension's entry stays in the commit: an erasure or a purge deletes
   * it once the dimension is empty, and the commit's put is what tells it (by `w`) that a write came back.
   */
  plain?: Set<string> | undefined;
}

/**
 * Plain entries this container is putting now (putPlainEntries), by table and key. Without it, writers entering a
 * dimension new to the container at once each put its entries: 64 writers of one account moving tickets to a
 * status the container had not written sent 64 batches of the same entries, and on DynamoDB Local, serving one
 * writer at a time, some of those batches waited past the store's 2 s twice and answered 503 (docs/capacity.md,
 * "Contention, measured"). A Lambda container serves one request at a time, so deployed this changes nothing.
 */
const putting = new Map<string, Promise<void>>();

/**
 * Puts the plain directory entries a write carries (DirectoryPlan.plain: they need no commit), each at most once
 * at a time in this container: an entry another write here is putting is waited for, and put again by this write
 * only if that put failed; a waiter never waits past its own request's deadline. An entry put is remembered at
 * once: it exists whatever becomes of the commit beside it.
 */
export async function putPlainEntries(entries: Record<string, unknown>[]): Promise<void> {
  const table = tableName();
  const keyOf = (entry: Record<string, unknown>) => `${table}\u0000${keyString(entry)}`;
  const mine: Record<string, unknown>[] = [];
  const waits: Promise<unknown>[] = [];
  for (const entry of entries) {
    const pending = putting.get(keyOf(entry));
    if (pending) waits.push(pending.catch(() => batchPutAll([entry])));
    else mine.push(entry);
  }
  if (mine.length > 0) {
    const put = batchPutAll(mine).then(() => {
      for (const entry of mine) remember(keyString(entry));
    });
    for (const entry of mine) putting.set(keyOf(entry), put);
    const settled = () => {
      for (const entry of mine) if (putting.get(keyOf(entry)) === put) putting.delete(keyOf(entry));
    };
    put.then(settled, settled);
    waits.push(put);
  }
  // Past the request's deadline a 503, as a store call's would be.
  const left = timeLeftMs();
  const all = Promise.all(waits);
  await (left === Number.POSITIVE_INFINITY
    ? all
    : withTimeout(all, Math.max(0, left), () => new ServiceUnavailable(1)));
}

/** After a commit landed: these directory entries exist (in it, or put before it). */
export function rememberDirectoryEntries(entries: Record<string, unknown>[]): void {
  for (const entry of entries) remember(keyString(entry));
}

/**
 * Puts the entries of these dimensions that this container has not seen written (the reindex, page by page), and
 * every keyed dimension's (an address, a custom field's value: dimensions.ts, isKeyedDimension) whatever it
 * remembers: an erasure or a purge deletes such an entry once its dimension is empty, behind every other
 * container's back, and a write of the same value through a container that remembered it writes none, so the
 * reindex puts it back from the entities themselves.
 */
export async function ensureDirectoryEntries<E>(
  index: Index<E>,
  accountId: string,
  dimensions: string[],
): Promise<number> {
  const declaration = index.declaration as IndexDeclaration<E, unknown>;
  const missing = [...new Set(dimensions)]
    .filter(
      (d) => isKeyedDimension(declaration, d) || !remembered.has(keyString(entryOf(index, accountId, d))),
    )
    .map((d) => entryOf(index, accountId, d));
  if (missing.length > 0) await batchPutAll(missing);
  for (const entry of missing) remember(keyString(entry));
  return missing.length;
}

/** Forgets an entry this container deleted (an emptied dimension's): its next write there puts it again. */
export function forgetDirectoryEntry(entry: { pk: string; sk: string }): void {
  remembered.delete(keyString(entry));
}

/** Forgets every remembered entry (a test that deletes directory entries behind the container's back). */
export function forgetDirectoryEntries(): void {
  remembered.clear();
}
