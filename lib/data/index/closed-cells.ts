import { COUNTER_SHARDS } from '../keys.ts';
import { tableName } from '../store/client.ts';
import { ATTR } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import type { Index } from './items.ts';
import { readCell } from './stats-reads.ts';

/**
 * Closing a stats cell (StatsFamily.closable): a commit that must not land while a cell counts anything (a team's
 * deletion: its open tickets), and after which no change may enter the cell, without any item that every change
 * entering the cell writes. The cell stays sharded: a change adds to its own shard, conditioned on that shard not
 * being closed (commit-actions.ts, statsActions, given WriteOptions.closed); the closing commit conditions every
 * shard on the value it read and marks every shard closed. Whichever lands second is refused: a change entering
 * first moved a shard the close read, a close first marked the shard the change adds to.
 *
 * Each shard is conditioned on its value as read, not on 0: an entity adds to its create's shard and takes away
 * from a random one when it leaves, so shards of a cell summing to 0 are not each 0.
 */

/** One attribute of a cell as read: its total, and each shard's value (undefined: no item or no attribute). */
export interface CellReading {
  attribute: string;
  total: number;
  shards: (number | undefined)[];
}

/** One attribute (`open:7`) of its cell, every shard: one Query of at most COUNTER_SHARDS small items. */
export async function readCellAttribute<E>(
  index: Index<E>,
  accountId: string,
  attribute: string,
): Promise<CellReading> {
  const { family, value } = index.statsCellOf(attribute);
  const items = await readCell(index, accountId, { family: family.family, value, sharded: family.sharded });
  const shards: (number | undefined)[] = Array.from({ length: family.sharded ? COUNTER_SHARDS : 1 });
  for (const item of items) {
    const { shard } = index.keys.statsCellOf(item.sk as string, family.sharded);
    if (item[attribute] !== undefined) shards[shard ?? 0] = Number(item[attribute]);
  }
  return { attribute, total: shards.reduce<number>((n, v) => n + (v ?? 0), 0), shards };
}

/**
 * The closing commit's part (one action a shard: COUNTER_SHARDS for a sharded family): every shard still holds
 * what `reading` saw, and is marked closed. A shard changed since is `refused` (read again and decide).
 */
export function closeCell<E>(
  index: Index<E>,
  accountId: string,
  reading: CellReading,
  refused: () => Error,
): CommitAction[] {
  const { family, value } = index.statsCellOf(reading.attribute);
  if (!family.closable) throw new Error(`${family.family} cells are not closable`);
  return reading.shards.map((seen, shard) => ({
    what: 'stats_closed',
    action: {
      Update: {
        TableName: tableName(),
        Key: index.keys.statsCell(accountId, family.family, value, family.sharded ? shard : undefined),
        UpdateExpression: 'SET #closed = :closed',
        ConditionExpression: seen === undefined ? 'attribute_not_exists(#a)' : '#a = :seen',
        ExpressionAttributeNames: { '#a': reading.attribute, '#closed': ATTR.closed },
        ExpressionAttributeValues: { ':closed': true, ...(seen === undefined ? {} : { ':seen': seen }) },
      },
    },
    refused,
  }));
}
