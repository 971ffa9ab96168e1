import { orderKeys } from '../keys.ts';
import { batchGetAll, queryAll, tableName } from '../store/client.ts';
import { ReadBudgetExceeded } from '../store/errors.ts';
import { ATTR } from '../store/items.ts';
import { confirmed, type DeferredMarks, holdsDimension, markedKey } from './confirmed.ts';
import type { Index } from './items.ts';
import { newestOnce } from './merged-reads.ts';
import { packOrderKey, unpackOrderKey } from './order-key.ts';
import { blockKeyMark } from './pending.ts';

/**
 * The reads that answer order keys, which a list is made of: a dimension's postings (a page, or all), its packed
 * blocks, postings asked by key (a search word's terms: term-reads.ts). Marked index items (written before their entity's
 * commit) count only once their entity is read and holds them.
 */

/** Where a merged read may stop short in each source: the sources' counts, and how many more to read past them. */
export interface SourceCaps {
  counts: Record<string, number>;
  /** Keys read past a source's count (a second read: tickets may have entered it since it was counted). */
  slack?: number;
}

/**
 * Order keys of a dimension, newest first. With `limit`, one page of at most that many (a deep page reads
 * its skipped keys too, but only these small key items), never more than `budget` of them; without, all.
 * A dimension a queue lists (dimensions.ts, postingSources) is its sources' newest merged, each key once: each
 * source may hold the whole page, so each reads it (or all it holds, where `caps` counts it), every source's keys
 * within the one budget. The sources are read at slightly different moments: a ticket moving between two of them
 * meanwhile may be in both reads (listed once) or in neither, so a caller that must not miss it reads again
 * (merged-reads.ts, confirmedPage).
 */
export async function queryPostings<E>(
  index: Index<E>,
  accountId: string,
  dim: string,
  limit?: number,
  budget = Number.POSITIVE_INFINITY,
  caps?: SourceCaps,
  deferred?: DeferredMarks,
): Promise<string[]> {
  const sources = index.postingSources(accountId, dim);
  if (sources.length > 1) {
    const wants = sources.map((s) =>
      limit === undefined ? undefined : Math.min(limit, (caps?.counts[s] ?? limit) + (caps?.slack ?? 0)),
    );
    if (!caps?.slack && wants.reduce((n: number, w) => n + (w ?? 0), 0) > budget)
      throw new ReadBudgetExceeded('page');
    const lists = await Promise.all(
      sources.map((s, i) =>
        wants[i] === 0 ? [] : queryPostings(index, accountId, s, wants[i], undefined, undefined, deferred),
      ),
    );
    return newestOnce(lists, limit);
  }
  for (let want = limit; ; ) {
    if (want !== undefined && want > budget) throw new ReadBudgetExceeded('page');
    const items = await queryAll(
      {
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk AND sk >= :first',
        ExpressionAttributeValues: {
          ':pk': index.keys.postingPartition(accountId, dim),
          ':first': orderKeys.first,
        },
        ProjectionExpression: 'sk, #u',
        ExpressionAttributeNames: { '#u': ATTR.unconfirmed },
        ScanIndexForward: false,
        ConsistentRead: true,
      },
      want,
    );
    const keys = await confirmed(
      index,
      accountId,
      items.map((item) => markedKey(item.sk as string, item)),
      holdsDimension(index, accountId, dim),
      deferred,
    );
    if (limit === undefined || want === undefined || keys.length >= limit || items.length < want) {
      return keys.slice(0, limit);
    }
    // Postings of entities that never committed took places in this page: read as many further as this
    // read dropped (counted afresh each pass, so `want` grows only by what is new, and strictly).
    want = limit + (items.length - keys.length);
  }
}

/**
 * Every packed order key a dimension lists, from its blocks (about 16 bytes an entity: a 4 KB read unit
 * carried 180 of them in the bench, against 36 postings). Keys marked unconfirmed count only once their entity
 * holds the dimension (confirmed as for postings); keys a create added before its commit (`p`, pending.ts) count
 * once no pending item of their creation time is left, or once their entity holds them. With `deferred` they are
 * counted as they are, and the list looks at the pending items beside its page (DeferredMarks).
 */
export async function queryBlocks<E>(
  index: Index<E>,
  accountId: string,
  dim: string,
  deferred?: DeferredMarks,
): Promise<Set<string>> {
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': index.keys.blockPartition(accountId, dim) },
    ProjectionExpression: '#k, #u, #p',
    ExpressionAttributeNames: { '#k': ATTR.blockKeys, '#u': ATTR.unconfirmed, '#p': ATTR.pendingBlockKeys },
    ConsistentRead: true,
  });
  const keys = new Set<string>();
  const marked: string[] = [];
  const pending: string[] = [];
  for (const item of items) {
    for (const packed of (item[ATTR.blockKeys] as Set<string> | undefined) ?? []) keys.add(packed);
    for (const packed of (item[ATTR.unconfirmed] as Set<string> | undefined) ?? []) marked.push(packed);
    for (const packed of (item[ATTR.pendingBlockKeys] as Set<string> | undefined) ?? []) pending.push(packed);
  }
  if (deferred && pending.length > 0) {
    deferred.addBlockKeys();
    for (const packed of pending) keys.add(packed);
  }
  const unsure = [
    ...marked.filter((p) => !keys.has(p)).map((p) => ({ orderKey: unpackOrderKey(p), mark: 1 })),
    ...(deferred
      ? []
      : pending
          .filter((p) => !keys.has(p))
          .map((p) => ({ orderKey: unpackOrderKey(p), mark: blockKeyMark(p) }))),
  ];
  if (unsure.length > 0) {
    for (const orderKey of await confirmed(index, accountId, unsure, holdsDimension(index, accountId, dim))) {
      keys.add(packOrderKey(orderKey));
    }
  }
  return keys;
}

/**
 * Which of these order keys a dimension lists: each one's posting read by its key (BatchGet), for a few
 * candidates against a large dimension, where reading the whole posting list would cost more.
 */
export async function postingsAmong<E>(
  index: Index<E>,
  accountId: string,
  dim: string,
  orderKeys: string[],
  deferred?: DeferredMarks,
): Promise<Set<string>> {
  const sources = index.postingSources(accountId, dim);
  const found = await Promise.all(
    sources.map(async (source) => {
      const items = await batchGetAll(
        orderKeys.map((k) => index.keys.posting(accountId, source, k)),
        `sk, ${ATTR.unconfirmed}`,
      );
      const keys = items.map((item) => markedKey(item.sk as string, item));
      return confirmed(index, accountId, keys, holdsDimension(index, accountId, source), deferred);
    }),
  );
  return new Set(found.flat());
}
