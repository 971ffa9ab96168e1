import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { orderKeys } from '../keys.ts';
import { dynamo, tableName } from '../store/client.ts';
import type { Versioned } from '../store/items.ts';
import type { Index } from './items.ts';
import { confirmedKeys, OLDEST_FIRST } from './merged-reads.ts';
import { getStoredMany } from './reads.ts';

/**
 * A dimension's entities oldest first, as its postings list them: the finder of a caller that works through a
 * dimension and takes each entity out of it (an erasure: a person's tickets by their address, their contact's
 * deals). Unlike a list's reads (order-key-reads.ts) it keeps every posting as written, marked ones too, and says
 * which entity each names: the caller decides about a posting no entity holds (a failed create's orphan, a create
 * still in flight) and may drop it (dropPosting).
 */

/** One posting of a dimension. */
export interface Listed<E> {
  /** Where it is: a page `after` it starts with the next posting. */
  at: string;
  /** When its entity was created (its order key says so: no read). */
  createdMicros: number;
  /** The entity it names, as stored (undefined: none; not read when the page asked `read: false`). */
  stored: Versioned<E> | undefined;
}

export interface ListedPage {
  /** A posting's `at` to start after, or null: from the oldest. */
  after: string | null;
  limit: number;
  /** Only postings below this bound (a lane of the moment sweep: an order key's time, never a posting's own). */
  before?: string | null;
  /** Whether the postings' entities are read (strongly consistent, one BatchGetItem); true unless false. */
  read?: boolean;
}

/**
 * A page of a dimension's postings, oldest first: one keys-only Query (one a source, in parallel, for a dimension
 * a queue lists: dimensions.ts, postingSources), then the page's entities in one BatchGetItem (a GetItem each cost
 * a hand-back's step 25 calls where one does: docs/capacity.md, "People").
 */
export async function oldestListed<E>(
  index: Index<E>,
  accountId: string,
  dim: string,
  page: ListedPage,
): Promise<Listed<E>[]> {
  const sources = index.postingSources(accountId, dim);
  // Each key once, and from several sources read twice (merged-reads.ts: a ticket moving between two of them during
  // one read is in the other).
  const read = async () =>
    OLDEST_FIRST.merge(
      await Promise.all(sources.map((source) => oldestKeys(index, accountId, source, page))),
    );
  const keys = (await confirmedKeys(sources.length, read, OLDEST_FIRST)).slice(0, page.limit);
  const stored =
    page.read === false
      ? []
      : await getStoredMany(
          index,
          keys.map((orderKey) => ({ accountId, orderKey })),
        );
  return keys.map((at, i) => ({ at, createdMicros: orderKeys.parts(at).createdMicros, stored: stored[i] }));
}

async function oldestKeys<E>(index: Index<E>, accountId: string, dim: string, page: ListedPage) {
  const { Items } = await dynamo.send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: page.before
        ? 'pk = :pk AND sk BETWEEN :from AND :to'
        : 'pk = :pk AND sk >= :from',
      ExpressionAttributeValues: {
        ':pk': index.keys.postingPartition(accountId, dim),
        // Postings sort above the dimension's counter shards, from the first order key.
        ':from': page.after === null ? orderKeys.first : `${page.after}\u0000`,
        ...(page.before ? { ':to': page.before } : {}),
      },
      ProjectionExpression: 'sk',
      Limit: page.limit,
      ConsistentRead: true,
    }),
  );
  return (Items ?? []).map((i) => String(i.sk)).filter((sk) => !index.keys.isCounterSort(sk));
}

/**
 * Deletes a posting by its place (`at`): one no entity holds, which still names its dimension's value (in each
 * of its sources, for a dimension a queue lists).
 */
export async function dropPosting<E>(index: Index<E>, accountId: string, dim: string, at: string) {
  await Promise.all(
    index
      .postingSources(accountId, dim)
      .map((source) =>
        dynamo.send(
          new DeleteCommand({ TableName: tableName(), Key: index.keys.posting(accountId, source, at) }),
        ),
      ),
  );
}
