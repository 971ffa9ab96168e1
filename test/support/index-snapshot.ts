import { contacts } from '#lib/data/contacts/contact-index.ts';
import { deals } from '#lib/data/deals/deal-index.ts';
import { entityItems } from '#lib/data/index/items.ts';
import { blockKeyMark, pendingMarksOf } from '#lib/data/index/pending.ts';
import { type IndexKeys, indexKeys, trashKeys } from '#lib/data/keys.ts';
import { getItem, queryAll, tableName } from '#lib/data/store/client.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';

const ENGINES: Record<string, { index: typeof tickets.index | typeof deals.index | typeof contacts.index }> =
  {
    TICKET: tickets,
    DEAL: deals,
    CONTACT: contacts,
  };

/** Every item of one partition (strongly consistent): an index partition of a test's own account. */
export const partitionItems = (pk: string) =>
  queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': pk },
    ConsistentRead: true,
  });

/** What one dimension of an account holds: its postings' and counter shards' sort keys, its blocks', its entry. */
export async function dimensionItems(keys: IndexKeys, accountId: string, dim: string) {
  const sortKeys = async (pk: string) => (await partitionItems(pk)).map((i) => String(i.sk));
  return {
    postings: await sortKeys(keys.postingPartition(accountId, dim)),
    blocks: await sortKeys(keys.blockPartition(accountId, dim)),
    entry: (await getItem(keys.directoryEntry(accountId, dim))) !== undefined,
  };
}

/**
 * What a reader can observe of an indexed entity's index in one account, read straight from DynamoDB Local: every
 * posting, sorted posting, block, term, counter and stats cell, a sharded counter or cell summed over its shards,
 * a count or block back at zero or empty as absent; the terms' sample too (what a search's probe reads). Two
 * snapshots are equal when every list, filter, total, search, queue and sum answers the same.
 */
export async function indexSnapshot(entity: string, accountId: string): Promise<Record<string, unknown>> {
  const keys = indexKeys(entity);
  const declared = ENGINES[entity]?.index;
  if (!declared) throw new Error(`no engine for ${entity}`);
  // Every index partition of the account, found by Query as the reindex finds them (its directory), never a Scan
  // of the table the whole test run shares.
  const part = partitionItems;
  const dims = (await part(keys.directoryPartition(accountId)))
    .map((item) => String(item.sk))
    .filter((sk) => !sk.startsWith('#'));
  const partitions = [
    ...keys.termsPartitions(accountId),
    keys.termSamplePartition(accountId),
    keys.legacyTermsPartition(accountId),
    ...declared.statsFamilies.map((f) => keys.statsPartition(accountId, f.family)),
    ...['all', ...dims].flatMap((d) => [
      keys.postingPartition(accountId, d),
      keys.blockPartition(accountId, d),
      ...Object.keys(declared.declaration.sorts ?? {}).map((sort) =>
        keys.sortedPartition(accountId, sort, d),
      ),
    ]),
  ];
  const scanned = (await Promise.all([...new Set(partitions)].map(part))).flat();
  const summed = new Map<string, Record<string, unknown>>();
  for (const item of scanned) {
    const pk = item.pk as string;
    const sk = item.sk as string;
    const sharded = keys.isCounterSort(sk) || (pk.startsWith(`${entity}_STATS`) && /#\d\d$/.test(sk));
    if (!sharded) {
      summed.set(`${pk} ${sk}`, item);
      continue;
    }
    const cell = keys.isCounterSort(sk) ? '#COUNT' : sk.slice(0, -3);
    const sum = summed.get(`${pk} ${cell}`) ?? { pk, sk: cell };
    for (const [k, v] of Object.entries(item)) {
      if (k !== 'pk' && k !== 'sk') sum[k] = ((sum[k] as number | undefined) ?? 0) + Number(v);
    }
    summed.set(`${pk} ${cell}`, sum);
  }
  // A create's pending mark (lib/data/index/pending.ts) whose pending item is gone reads as no mark at all.
  const pending = pendingMarksOf(await part(keys.pendingPartition(accountId)));
  const committedMark = (k: string, v: unknown) => k === 'u' && typeof v === 'string' && !pending.has(v);
  const index: Record<string, unknown> = {};
  for (const item of summed.values()) asLanded(item, pending);
  for (const { pk, sk, ...rest } of summed.values()) {
    const values = Object.fromEntries(
      Object.entries(rest)
        .filter(([k, v]) => v !== 0 && !(v instanceof Set && v.size === 0) && !committedMark(k, v))
        .map(([k, v]) => [k, v instanceof Set ? [...v].sort() : typeof v === 'object' ? String(v) : v]),
    );
    // A counter, block or stats cell at zero or empty is as good as absent (a rebuild deletes it).
    const empty =
      Object.keys(values).length === 0 &&
      (sk === '#COUNT' ||
        String(pk).startsWith(`${entity}_BLOCKS`) ||
        String(pk).startsWith(`${entity}_STATS`));
    if (!empty) index[`${pk} ${sk}`] = values;
  }
  return index;
}

/**
 * A block's keys a create added before its commit (`p`) whose pending item is gone, moved to `k`: as readers
 * count them, and as the reindex leaves them (sweep-blocks.ts).
 */
export function asLanded(item: Record<string, unknown>, pending: Set<string>): void {
  const p = item.p instanceof Set ? [...(item.p as Set<string>)] : [];
  const landed = p.filter((key) => !pending.has(blockKeyMark(key)));
  if (landed.length === 0) return;
  item.k = new Set([...((item.k as Set<string> | undefined) ?? []), ...landed]);
  item.p = new Set(p.filter((key) => !landed.includes(key)));
}

/** The account's trash items, as stored (one Query of its trash partition). */
export function trashItemsOf(accountId: string) {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': trashKeys.partition(accountId) },
    ConsistentRead: true,
  });
}

/** The entity items of the account (one Query of each of its entity partitions). */
export async function entityItemsOf(entity: string, accountId: string) {
  const partitions = indexKeys(entity).itemPartitions(accountId);
  const pages = await Promise.all(
    partitions.map((pk) =>
      queryAll({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        ConsistentRead: true,
      }),
    ),
  );
  return pages.flat().sort((a, b) => (String(a.sk) < String(b.sk) ? -1 : 1));
}

type Engine = typeof tickets | typeof deals | typeof contacts;

/** The terms' sample of an account as held: its sort keys and the marks (`u`) they carry, by sort key. */
export async function sampleOf(engine: Engine, accountId: string) {
  return (await partitionItems(engine.index.keys.termSamplePartition(accountId)))
    .map((i) => ({ sk: String(i.sk), u: i.u }))
    .sort((a, b) => (a.sk < b.sk ? -1 : a.sk > b.sk ? 1 : 0));
}

/** The sample's sort keys the live entities' terms give (entityItems: each sampled term's copy), from their uuids. */
export async function expectedSample(engine: Engine, accountId: string, uuids: string[]): Promise<string[]> {
  const pk = engine.index.keys.termSamplePartition(accountId);
  const keys: string[] = [];
  for (const uuid of uuids) {
    const read = await (engine as typeof tickets).getByUuid(accountId, uuid);
    if (!read) continue;
    const built = entityItems(engine.index as typeof tickets.index, accountId, read.entity as never);
    keys.push(...built.prefixTerms.filter((t) => t.pk === pk).map((t) => String(t.sk)));
  }
  return keys.sort();
}
