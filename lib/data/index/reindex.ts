import {
  DeleteCommand,
  NumberValue,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { addDecimal } from '#lib/decimal.ts';
import { nowMillis } from '#lib/time.ts';
import { batchDeleteAll, batchGetAll, batchPutAll, dynamo, getItem, queryAll, tableName } from '../client.ts';
import { isConditionFailure } from '../errors.ts';
import { ATTR, chunks, entityOf, type ItemKey, keyString } from '../items.ts';
import { NUMBERS_PER_BLOCK, orderKeys, parseTermKey } from '../keys.ts';
import { hasBlocks, type StatsFamily } from './declaration.ts';
import { ensureDirectoryEntries } from './directory.ts';
import { type EntityItems, entityItems, type Index } from './items.ts';
import { packOrderKey, unpackOrderKey } from './order-key.ts';

/**
 * Rebuilds an account's index of an entity from its entities, page by page (docs/data-model.md, "Reindex"):
 * every posting, term, counter, block and stats cell become exactly what creating the entities as they are now
 * would have written (a sharded counter's or cell's total in its shard 0, its other shards deleted), and index
 * items no entity accounts for are deleted (with the blocks of earlier releases). It reads
 * only the account's own partitions (its entities, its stats cells' partitions, its directory of dimensions, each
 * dimension's postings and blocks, its terms), never a Scan; it holds at most `pageSize` entities at a time; and it keeps its phase and cursor in a progress item
 * after every page, so a run that stops (a crash, a timeout, Ctrl-C) is continued by running it again.
 *
 * 1. build: each page of entities puts its postings and terms (as they are: puts that change nothing leave the
 *    lists as they were), adds its keys to its blocks (set additions), writes the directory entries of its
 *    dimensions and adds what it counts in the stats cells to the sums kept in the progress item.
 * 2. stats: each family of stats cells (a partition each, Queried) is set to the sums: a cell's totals put in one
 *    item (a sharded cell's in shard 0) and its other shards deleted in the same transaction, so a reader sums
 *    the same total before and after; cells no entity counts in are deleted.
 * 3. sweep: each dimension of the directory: its postings are read page by page and each checked against its
 *    entity (one BatchGet a page); those of entities absent or no longer in the dimension are deleted, the rest
 *    counted into its counter (put in shard 0, the other shards and an earlier release's `#COUNT` deleted in the
 *    same transaction); its blocks are rewritten to the keys of entities they hold, or deleted (a block its
 *    updates emptied, or one of the earlier layout).
 * 4. terms: the terms partition, checked the same way.
 * It is a maintenance step, not a concurrent one: the account must take no writes of the entity while it runs.
 */

export interface ReindexOptions {
  /** Entities (or index keys) read and held at a time: the bound on the reindex's memory. */
  pageSize?: number;
}

export interface ReindexResult {
  entities: number;
  written: number;
  /** Index items no entity accounts for, deleted. */
  removed: number;
  /**
   * Shards folded: counter shards and stats cell shards deleted once their total was put in shard 0 (and counters
   * and cells no entity counts in any more).
   */
  folded: number;
  /** Blocks whose every key the updates had taken out, deleted. */
  emptied: number;
  /** The run continued one that had stopped. */
  resumed: boolean;
  /** The most entities this run held in memory at once (never more than the page size). */
  peakHeld: number;
}

export const REINDEX_PAGE_SIZE = 100;
/**
 * The progress item is put at every phase's start and end and, between, after the first page done more than this
 * long after the last put: a run that stops repeats at most this much work (every step may be repeated).
 */
const SAVE_EVERY_MS = 1_000;
/** BatchWrites of a page sent at once (each of 25 items). */
const PARALLEL_WRITES = 8;

type Phase = 'build' | 'stats' | 'sweep' | 'terms';

/** What the progress item keeps between pages. */
interface Progress {
  phase: Phase;
  /**
   * build: the last order key done; stats: the last family done; sweep: the last dimension done; terms: the
   * last term done.
   */
  after?: string | undefined;
  /** sweep: the dimension under way, the part of it, the last key done there, and what it counted so far. */
  dimension?: {
    name: string;
    part: 'postings' | 'blocks' | 'sorted';
    /** part `sorted`: the sort under way (IndexDeclaration.sorts, in name order). */
    sort?: string;
    after?: string;
    count: number;
    /** The counter's items as found: each shard's sort key (and an earlier release's `#COUNT`) and count. */
    counter?: Record<string, number>;
  };
  /** What the entities done so far add to the stats cells' attributes (exact decimals). */
  stats: Record<string, string>;
  entities: number;
  written: number;
  removed: number;
  folded?: number;
  emptied?: number;
}

const PROGRESS_TYPE = 'index_reindex';

export async function reindexAccount<E>(
  index: Index<E>,
  accountId: string,
  options: ReindexOptions = {},
): Promise<ReindexResult> {
  const pageSize = Math.max(1, Math.floor(options.pageSize ?? REINDEX_PAGE_SIZE));
  const { keys } = index;
  const progressKey = keys.reindexProgress(accountId);
  const stored = await getItem(progressKey);
  const resumed = stored !== undefined;
  const progress: Progress = stored
    ? (JSON.parse(String(stored.progress)) as Progress)
    : { phase: 'build', stats: {}, entities: 0, written: 0, removed: 0, folded: 0, emptied: 0 };
  let peakHeld = 0;
  const held = (n: number) => {
    peakHeld = Math.max(peakHeld, n);
  };
  let savedAt = nowMillis();
  /** Saves the progress: at once (`now`), or when the last save is more than SAVE_EVERY_MS old. */
  const save = async (now = false) => {
    if (!now && nowMillis() - savedAt < SAVE_EVERY_MS) return;
    await dynamo.send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...progressKey, type: PROGRESS_TYPE, progress: JSON.stringify(progress) },
      }),
    );
    savedAt = nowMillis();
  };

  if (!resumed) await save(true);

  /** The account's entities at these order keys (at most a page: the caller chunks), by order key. */
  const entitiesAt = async (orderKeyList: string[]): Promise<Map<string, E>> => {
    const unique = [...new Set(orderKeyList)];
    held(unique.length);
    const items = await batchGetAll(unique.map((k) => keys.item(accountId, k)));
    return new Map(items.map((item) => [item.sk as string, entityOf<E>(item)]));
  };

  if (progress.phase === 'build') {
    for await (const { items } of pagesOf(keys.itemPartition(accountId), () => progress.after, {
      limit: pageSize,
    })) {
      held(items.length);
      const totals = new IndexTotals(index, accountId, progress.stats);
      const puts: Record<string, unknown>[] = [];
      const dimensions: string[] = [];
      const dueMoves: DueMove[] = [];
      for (const item of items) {
        const entity = entityOf<E>(item);
        const built = entityItems(index, accountId, entity);
        puts.push(...ownItems(built));
        totals.add(built);
        dimensions.push(...index.dimensionsOf(accountId, entity));
        const move = index.declaration.due && dueMoveOf(item, built.entity);
        if (move) dueMoves.push(move);
      }
      // The directory first: a dimension is listed before any item of it is written.
      progress.written += await ensureDirectoryEntries(index, accountId, dimensions);
      await Promise.all(chunks(puts, Math.ceil(puts.length / PARALLEL_WRITES) || 1).map(batchPutAll));
      const blocks = totals.blockAdditions();
      for (const group of chunks(blocks, 25)) await Promise.all(group.map(addToBlock));
      let moved = 0;
      for (const group of chunks(dueMoves, 25)) {
        moved += (await Promise.all(group.map(writeDueEntry))).filter(Boolean).length;
      }
      progress.after = items[items.length - 1]?.sk as string;
      progress.entities += items.length;
      progress.written += puts.length + blocks.length + moved;
      progress.stats = totals.statsSums();
      await save();
    }
    Object.assign(progress, { phase: 'stats', after: undefined });
    await save(true);
  }

  if (progress.phase === 'stats') {
    const totals = new IndexTotals(index, accountId, progress.stats);
    const families = index.statsFamilies.filter(
      (f) => progress.after === undefined || f.family > progress.after,
    );
    for (const family of [...families].sort((a, b) => a.family.localeCompare(b.family))) {
      await setStatsFamily(index, accountId, family, totals, progress);
      progress.after = family.family;
      await save();
    }
    Object.assign(progress, { phase: 'sweep', after: undefined });
    await save(true);
  }

  if (progress.phase === 'sweep') {
    for (;;) {
      // The dimension under way, if a run stopped in it, else the ones after the last done. Dimension names
      // start with a letter: the progress item (`#REINDEX`) sorts before them all.
      const under = progress.dimension?.name;
      const page = await dynamo.send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: under ? 'pk = :pk AND sk >= :from' : 'pk = :pk AND sk > :from',
          ExpressionAttributeValues: {
            ':pk': keys.directoryPartition(accountId),
            ':from': under ?? progress.after ?? progressKey.sk,
          },
          ProjectionExpression: 'sk',
          ConsistentRead: true,
          Limit: pageSize,
        }),
      );
      const names = (page.Items ?? []).map((item) => item.sk as string);
      if (names.length === 0) break;
      for (const name of names) {
        progress.dimension ??= { name, part: 'postings', count: 0 };
        await sweepDimension(index, accountId, progress, pageSize, entitiesAt, save);
        progress.after = name;
        progress.dimension = undefined;
        await save();
      }
      if (!page.LastEvaluatedKey) break;
    }
    Object.assign(progress, { phase: 'terms', after: undefined });
    await save(true);
  }

  if (progress.phase === 'terms') {
    const pages = pagesOf(keys.termsPartition(accountId), () => progress.after, {
      limit: pageSize,
      projection: 'pk, sk',
    });
    for await (const { items } of pages) {
      const terms = items.map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
      const entities = await entitiesAt(terms.map((t) => parseTermKey(t.sk).orderKey));
      // Each entity's own terms, built once a page (a term's key costs a keyed hash a character: keyed.ts).
      const own = new Map<string, Set<string>>();
      for (const [orderKey, entity] of entities) {
        const built = entityItems(index, accountId, entity);
        own.set(
          orderKey,
          new Set([...(built.numberTerm ? [built.numberTerm] : []), ...built.prefixTerms].map(keyString)),
        );
      }
      const stale = terms.filter((term) => !own.get(parseTermKey(term.sk).orderKey)?.has(keyString(term)));
      await batchDeleteAll(stale);
      progress.removed += stale.length;
      progress.after = terms[terms.length - 1]?.sk;
      await save();
    }
  }

  await dynamo.send(new DeleteCommand({ TableName: tableName(), Key: progressKey }));
  return {
    entities: progress.entities,
    written: progress.written,
    removed: progress.removed,
    folded: progress.folded ?? 0,
    emptied: progress.emptied ?? 0,
    resumed,
    peakHeld,
  };
}

/**
 * One family of stats cells set to the sums: the sort keys of its partition read (one Query, paged: a cell's
 * shards need not be side by side), then each counted cell put with its other shards deleted in one transaction
 * (at most COUNTER_SHARDS actions), and every cell no entity counts in deleted. What it holds is bounded by the
 * family's cells (times COUNTER_SHARDS), as the sums in the progress item are, never by the entities.
 */
async function setStatsFamily<E>(
  index: Index<E>,
  accountId: string,
  family: StatsFamily,
  totals: IndexTotals<E>,
  progress: Progress,
): Promise<void> {
  const { keys } = index;
  const wanted = new Map(
    totals
      .statsItems()
      .filter((item) => item.pk === keys.statsPartition(accountId, family.family))
      .map((item) => [item.sk as string, item]),
  );
  /** The items found of each counted cell other than the one to put (its shards to delete), by cell. */
  const extra = new Map<string, string[]>();
  const found = new Set<string>();
  const stale: { pk: string; sk: string }[] = [];
  const pk = keys.statsPartition(accountId, family.family);
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ProjectionExpression: 'pk, sk',
    ConsistentRead: true,
  });
  for (const item of items) {
    const sk = item.sk as string;
    found.add(sk);
    if (wanted.has(sk)) continue;
    const { value } = keys.statsCellOf(sk, family.sharded);
    const target = keys.statsCell(accountId, family.family, value, family.sharded ? 0 : undefined).sk;
    if (wanted.has(target)) extra.set(target, [...(extra.get(target) ?? []), sk]);
    else stale.push({ pk, sk });
  }
  for (const [sk, item] of wanted) {
    const others = extra.get(sk) ?? [];
    await dynamo.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName: tableName(), Item: item } },
          ...others.map((other) => ({ Delete: { TableName: tableName(), Key: { pk, sk: other } } })),
        ],
      }),
    );
    progress.written += 1;
    progress.folded = (progress.folded ?? 0) + others.length;
  }
  await batchDeleteAll(stale);
  progress.folded = (progress.folded ?? 0) + stale.length;
}

/** An entity item whose due entry (IndexDeclaration.due, on the item itself: gsi2) is not what its entity gives. */
interface DueMove {
  key: ItemKey;
  version: unknown;
  entry: { gsi2pk: unknown; gsi2sk: unknown } | undefined;
}

/**
 * The due entry to write on a stored entity item, when it differs from the one its entity gives (an entity stored
 * before its declaration had a due time, or one that drifted): undefined when it is right.
 */
function dueMoveOf(item: Record<string, unknown>, built: Record<string, unknown>): DueMove | undefined {
  if (item.gsi2pk === built.gsi2pk && item.gsi2sk === built.gsi2sk) return undefined;
  return {
    key: { pk: item.pk as string, sk: item.sk as string },
    version: item[ATTR.version],
    entry: built.gsi2pk === undefined ? undefined : { gsi2pk: built.gsi2pk, gsi2sk: built.gsi2sk },
  };
}

/**
 * Sets (or removes) an entity item's due entry, only those two attributes and only at the version read: an
 * entity changed since wrote its own entry in its commit, and is left as it is. Answers whether it wrote.
 */
async function writeDueEntry(move: DueMove): Promise<boolean> {
  try {
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: move.key,
        UpdateExpression: move.entry ? 'SET gsi2pk = :pk, gsi2sk = :sk' : 'REMOVE gsi2pk, gsi2sk',
        ConditionExpression: move.version === undefined ? 'attribute_not_exists(#v)' : '#v = :v',
        ExpressionAttributeNames: { '#v': ATTR.version },
        ...(move.version === undefined && !move.entry
          ? {}
          : {
              ExpressionAttributeValues: {
                ...(move.version === undefined ? {} : { ':v': move.version }),
                ...(move.entry ? { ':pk': move.entry.gsi2pk, ':sk': move.entry.gsi2sk } : {}),
              },
            }),
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** An entity's own index items: what a create puts (its postings and terms); counters and blocks are shared. */
function ownItems(built: EntityItems): Record<string, unknown>[] {
  return [
    ...built.boundedPostings,
    ...built.sortedPostings,
    ...built.unbounded.map((u) => u.posting),
    ...(built.numberTerm ? [built.numberTerm] : []),
    ...built.prefixTerms,
  ];
}

function addToBlock({ key, packed }: { key: ItemKey; packed: Set<string> }) {
  return dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: key,
      UpdateExpression: 'ADD #k :keys',
      ExpressionAttributeNames: { '#k': ATTR.blockKeys },
      ExpressionAttributeValues: { ':keys': packed },
    }),
  );
}

/**
 * One dimension of the sweep: its postings (checked against their entities, counted), then its blocks (kept to
 * the keys of entities they hold), page by page, the cursor saved after each page.
 */
async function sweepDimension<E>(
  index: Index<E>,
  accountId: string,
  progress: Progress,
  pageSize: number,
  entitiesAt: (orderKeys: string[]) => Promise<Map<string, E>>,
  save: () => Promise<unknown>,
): Promise<void> {
  const { keys } = index;
  const dimension = progress.dimension as NonNullable<Progress['dimension']>;
  const name = dimension.name;
  const holds = (entity: E | undefined) =>
    entity !== undefined && index.dimensionsOf(accountId, entity).includes(name);
  // A dimension whose postings this run read from the first in at most a page: the packed keys of the entities
  // it lists, whole (its blocks are then checked against them, with no entity read).
  let listed: Set<string> | undefined;

  if (dimension.part === 'postings') {
    listed = dimension.after === undefined ? new Set<string>() : undefined;
    const pk = keys.postingPartition(accountId, name);
    const counterKey = keys.counter(accountId, name);
    const pages = pagesOf(pk, () => dimension.after, {
      limit: pageSize,
      projection: 'pk, sk, #n',
      names: { '#n': ATTR.count },
    });
    for await (const { items, more } of pages) {
      const found = items.map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
      for (const item of items.filter((item) => keys.isCounterSort(item.sk as string)))
        dimension.counter = { ...dimension.counter, [item.sk as string]: Number(item[ATTR.count] ?? 0) };
      const postings = found.filter((k) => !keys.isCounterSort(k.sk));
      const entities = await entitiesAt(postings.map((p) => p.sk));
      const stale = postings.filter((p) => !holds(entities.get(p.sk)));
      if (listed && listed.size + postings.length <= pageSize && !more) {
        for (const p of postings) if (holds(entities.get(p.sk))) listed.add(packOrderKey(p.sk));
      } else listed = undefined;
      await batchDeleteAll(stale);
      progress.removed += stale.length;
      dimension.count += postings.length - stale.length;
      dimension.after = found[found.length - 1]?.sk;
      await save();
    }
    // The count of an unbounded dimension is its counter, put in shard 0 with its other shards (and an earlier
    // release's one `#COUNT`) deleted in the same transaction: a reader sums the same total before and after. A
    // bounded one is counted in the stats cells: a counter there is deleted.
    const shards = Object.entries(dimension.counter ?? {});
    const others = shards.filter(([sk]) => sk !== counterKey.sk).map(([sk]) => sk);
    if (!index.isStatsDimension(name) && dimension.count > 0) {
      if (others.length > 0 || dimension.counter?.[counterKey.sk] !== dimension.count) {
        await dynamo.send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: { TableName: tableName(), Item: { ...counterKey, [ATTR.count]: dimension.count } } },
              ...others.map((sk) => ({ Delete: { TableName: tableName(), Key: { pk: counterKey.pk, sk } } })),
            ],
          }),
        );
        progress.written += 1;
        progress.folded = (progress.folded ?? 0) + others.length;
      }
    } else if (shards.length > 0) {
      await batchDeleteAll(shards.map(([sk]) => ({ pk: counterKey.pk, sk })));
      progress.folded = (progress.folded ?? 0) + shards.length;
    }
    Object.assign(dimension, { part: 'blocks', after: undefined });
    await save();
  }

  if (dimension.part === 'blocks') {
    // `all` keeps no blocks (declaration.ts, hasBlocks).
    if (hasBlocks(name)) await sweepBlocks(index, accountId, progress, pageSize, entitiesAt, save, listed);
    Object.assign(dimension, { part: 'sorted', after: undefined });
    await save();
  }

  // Its sorted postings (IndexDeclaration.sorts: in `all` and each bounded dimension), page by page, each checked
  // against its entity (one BatchGet a page): one whose entity is gone, is no longer in the dimension, or has
  // another sort value now (a due time since moved: the posting an update's lost commit, or a hand, left) is
  // deleted. The build put every entity's own.
  if (!index.isStatsDimension(name)) return;
  const sorts = Object.entries(index.declaration.sorts ?? {}).sort(([x], [y]) => x.localeCompare(y));
  for (const [sort, sortValue] of sorts) {
    if (dimension.sort !== undefined && sort < dimension.sort) continue;
    if (dimension.sort !== sort) Object.assign(dimension, { sort, after: undefined });
    const pages = pagesOf(keys.sortedPartition(accountId, sort, name), () => dimension.after, {
      limit: pageSize,
      projection: 'pk, sk',
    });
    for await (const { items } of pages) {
      const found = items.map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
      const entities = await entitiesAt(found.map((p) => keys.orderKeyOfSorted(p.sk)));
      const stale = found.filter((p) => {
        const orderKey = keys.orderKeyOfSorted(p.sk);
        const entity = entities.get(orderKey);
        if (entity === undefined || !holds(entity)) return true;
        return keys.sorted(accountId, sort, name, sortValue(entity), orderKey).sk !== p.sk;
      });
      await batchDeleteAll(stale);
      progress.removed += stale.length;
      dimension.after = found[found.length - 1]?.sk;
      await save();
    }
  }
}

/**
 * One dimension's blocks, rewritten to the keys of entities they hold (checked against the postings just read
 * whole, `listed`, or against the entities), or deleted, page by page, the cursor saved after each page.
 */
async function sweepBlocks<E>(
  index: Index<E>,
  accountId: string,
  progress: Progress,
  pageSize: number,
  entitiesAt: (orderKeys: string[]) => Promise<Map<string, E>>,
  save: () => Promise<unknown>,
  listed: Set<string> | undefined,
): Promise<void> {
  const { keys } = index;
  const dimension = progress.dimension as NonNullable<Progress['dimension']>;
  const name = dimension.name;
  const holds = (entity: E | undefined) =>
    entity !== undefined && index.dimensionsOf(accountId, entity).includes(name);
  // A block holds the keys of up to NUMBERS_PER_BLOCK entities: a page of blocks holds about a page of keys.
  const pages = pagesOf(keys.blockPartition(accountId, name), () => dimension.after, {
    limit: Math.max(1, Math.floor(pageSize / NUMBERS_PER_BLOCK)),
  });
  for await (const { items: blocks } of pages) {
    for (const block of blocks) {
      const key = { pk: block.pk as string, sk: block.sk as string };
      const packed = [
        ...new Set([
          ...((block[ATTR.blockKeys] as Set<string> | undefined) ?? []),
          ...((block[ATTR.unconfirmed] as Set<string> | undefined) ?? []),
        ]),
      ];
      const valid = new Set<string>();
      const inBlock = (p: string) =>
        keys.block(accountId, name, orderKeys.parts(unpackOrderKey(p)).number).sk === key.sk;
      if (listed) {
        for (const p of packed) if (listed.has(p) && inBlock(p)) valid.add(p);
      } else {
        for (const group of chunks(packed, pageSize)) {
          const entities = await entitiesAt(group.map(unpackOrderKey));
          for (const p of group) if (holds(entities.get(unpackOrderKey(p))) && inBlock(p)) valid.add(p);
        }
      }
      const kept = (block[ATTR.blockKeys] as Set<string> | undefined) ?? new Set<string>();
      const unchanged =
        block[ATTR.unconfirmed] === undefined &&
        kept.size === valid.size &&
        [...valid].every((p) => kept.has(p));
      if (valid.size === 0) {
        await batchDeleteAll([key]);
        // A block every key of which its updates took out, or one holding keys it should not.
        if (packed.length === 0) progress.emptied = (progress.emptied ?? 0) + 1;
        else progress.removed += 1;
      } else if (!unchanged) {
        await batchPutAll([blockItem(key, valid)]);
        progress.written += 1;
      }
    }
    dimension.after = blocks[blocks.length - 1]?.sk as string;
    await save();
  }
}

/**
 * One partition read page by page, strongly consistent, from the cursor `after()` returns when each page is asked
 * for: the caller saves the last sort key it has done after each page, so a run that stops resumes after it.
 * `more` is false on the partition's last page.
 */
async function* pagesOf(
  pk: string,
  after: () => string | undefined,
  options: { limit: number; projection?: string; names?: Record<string, string> },
): AsyncGenerator<{ items: Record<string, unknown>[]; more: boolean }> {
  for (;;) {
    const from = after();
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ...(options.projection ? { ProjectionExpression: options.projection } : {}),
        ...(options.names ? { ExpressionAttributeNames: options.names } : {}),
        ConsistentRead: true,
        Limit: options.limit,
        ...(from ? { ExclusiveStartKey: { pk, sk: from } } : {}),
      }),
    );
    const items = page.Items ?? [];
    if (items.length === 0) return;
    const more = page.LastEvaluatedKey !== undefined;
    yield { items, more };
    if (!more) return;
  }
}

/** A block item as a create's commits leave it: its packed keys, none marked. */
const blockItem = (key: ItemKey, packed: Set<string>) => ({ ...key, [ATTR.blockKeys]: packed });

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
