import { queryAll, scanAll, tableName } from '#lib/data/client.ts';
import { indexKeys, trashKeys } from '#lib/data/keys.ts';

/**
 * What a reader can observe of an indexed entity's index in one account, read straight from DynamoDB Local: every
 * posting, sorted posting, block, term, counter and stats cell, a sharded counter or cell summed over its shards,
 * a count or block back at zero or empty as absent. Two snapshots are equal when every list, filter, total,
 * search, queue and sum answers the same.
 */
export async function indexSnapshot(entity: string, accountId: string): Promise<Record<string, unknown>> {
  const keys = indexKeys(entity);
  const scanned = await scanAll({
    TableName: tableName(),
    FilterExpression:
      'begins_with(pk, :a) OR begins_with(pk, :b) OR pk = :c OR begins_with(pk, :d) OR begins_with(pk, :e)',
    ExpressionAttributeValues: {
      ':a': keys.postingPartition(accountId, ''),
      ':b': keys.blockPartition(accountId, ''),
      ':c': keys.termsPartition(accountId),
      ':d': keys.statsPartition(accountId, ''),
      ':e': keys.sortedPartition(accountId, '', '').replace(/##$/, '#'),
    },
    ConsistentRead: true,
  });
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
  const index: Record<string, unknown> = {};
  for (const { pk, sk, ...rest } of summed.values()) {
    const values = Object.fromEntries(
      Object.entries(rest)
        .filter(([, v]) => v !== 0 && !(v instanceof Set && v.size === 0))
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

/** The account's trash items, as stored (one Query of its trash partition). */
export function trashItemsOf(accountId: string) {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': trashKeys.partition(accountId) },
    ConsistentRead: true,
  });
}

/** The entity items of the account (one Query of its entity partition). */
export function entityItemsOf(entity: string, accountId: string) {
  return queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': indexKeys(entity).itemPartition(accountId) },
    ConsistentRead: true,
  });
}
