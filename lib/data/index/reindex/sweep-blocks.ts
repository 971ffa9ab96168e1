import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { NUMBERS_PER_BLOCK, orderKeys } from '../../keys.ts';
import { dynamo, tableName } from '../../store/client.ts';
import { isConditionFailure } from '../../store/errors.ts';
import { ATTR, chunks, type ItemKey } from '../../store/items.ts';
import type { IndexDeclaration } from '../declaration.ts';
import { hasBlocks } from '../dimensions.ts';
import { unpackOrderKey } from '../order-key.ts';
import { blockKeyMark, createsUnderWay } from '../pending.ts';
import { pagesOf } from './pages.ts';
import type { DimensionProgress, ReindexRun } from './run.ts';

/**
 * The sweep's second part of a dimension (sweep.ts): its blocks, each with the keys of entities it should not hold
 * taken out (checked against the postings just read whole, `listed`, or against the entities), keys written before
 * their commit that it holds rightly moved to its confirmed set, and a block left with none deleted (one its updates
 * emptied, or one of the earlier layout), page by page, the cursor saved after each page. A key a create added
 * before its commit (`p`, pending.ts) whose pending item is younger than a create can run stays: its entity may not
 * exist yet. Only what it decided is deleted (a set's DELETE), so keys writes add meanwhile are kept.
 */
export async function sweepBlocks<E>(
  run: ReindexRun<E>,
  dimension: DimensionProgress,
  listed: Set<string> | undefined,
): Promise<void> {
  const { index, accountId, progress } = run;
  // A block holds the keys of up to NUMBERS_PER_BLOCK entities: a page of blocks holds about a page of keys.
  const pages = pagesOf(index.keys.blockPartition(accountId, dimension.name), () => dimension.after, {
    limit: Math.max(1, Math.floor(run.pageSize / NUMBERS_PER_BLOCK)),
  });
  for await (const { items: blocks } of pages) {
    const underWay = blocks.some((b) => b[ATTR.pendingBlockKeys] !== undefined)
      ? await createsUnderWay(index, accountId)
      : new Set<string>();
    for (const block of blocks) {
      const key = { pk: block.pk as string, sk: block.sk as string };
      const sets = {
        k: [...((block[ATTR.blockKeys] as Set<string> | undefined) ?? [])],
        u: [...((block[ATTR.unconfirmed] as Set<string> | undefined) ?? [])],
        p: [...((block[ATTR.pendingBlockKeys] as Set<string> | undefined) ?? [])],
      };
      const packed = [...new Set([...sets.k, ...sets.u, ...sets.p])];
      const valid = await validKeys(run, dimension.name, key, packed, listed);
      const kept = (p: string) => valid.has(p) || underWay.has(blockKeyMark(p));
      // Keys it holds rightly end in `k`; a create's key whose entity is not there yet stays in `p`.
      const inK = new Set(sets.k);
      const change = {
        confirmed: [...new Set([...sets.u, ...sets.p])].filter((p) => valid.has(p) && !inK.has(p)),
        k: sets.k.filter((p) => !valid.has(p)),
        u: sets.u,
        p: sets.p.filter((p) => valid.has(p) || !kept(p)),
      };
      if (!packed.some(kept)) {
        await deleteBlock(key, sets);
        // A block every key of which its updates took out, or one holding keys it should not.
        if (packed.length === 0) progress.emptied = (progress.emptied ?? 0) + 1;
        else progress.removed += 1;
      } else if (change.k.length + change.u.length + change.p.length > 0) {
        await takeOut(key, change);
        progress.written += 1;
      }
    }
    dimension.after = blocks[blocks.length - 1]?.sk as string;
    await run.save();
  }
}

/**
 * Takes keys out of a block's sets, and moves its confirmed keys from `u` and `p` to `k` (two updates: one expression may
 * not name `k` twice), leaving keys added meanwhile as they are; deletes the block if nothing is left in it.
 */
async function takeOut(
  key: ItemKey,
  change: { confirmed: string[]; k: string[]; u: string[]; p: string[] },
): Promise<void> {
  if (change.confirmed.length > 0) {
    await setUpdate(key, [['ADD', ATTR.blockKeys, change.confirmed]]);
  }
  await setUpdate(key, [
    ['DELETE', ATTR.blockKeys, change.k],
    ['DELETE', ATTR.unconfirmed, change.u],
    ['DELETE', ATTR.pendingBlockKeys, change.p],
  ]);
}

async function setUpdate(key: ItemKey, clauses: ['ADD' | 'DELETE', string, string[]][]): Promise<void> {
  const used = clauses.filter(([, , values]) => values.length > 0);
  if (used.length === 0) return;
  const verbs = [...new Set(used.map(([verb]) => verb))];
  await dynamo.send(
    new UpdateCommand({
      TableName: tableName(),
      Key: key,
      UpdateExpression: verbs
        .map(
          (verb) =>
            `${verb} ${used.flatMap(([v, name]) => (v === verb ? [`#${name} :${name}`] : [])).join(', ')}`,
        )
        .join(' '),
      ExpressionAttributeNames: Object.fromEntries(used.map(([, name]) => [`#${name}`, name])),
      ExpressionAttributeValues: Object.fromEntries(
        used.map(([, name, values]) => [`:${name}`, new Set(values)]),
      ),
    }),
  );
}

/** Deletes a block whose keys were all read as not its own, unless a write added one since (kept then). */
async function deleteBlock(key: ItemKey, sets: { k: string[]; u: string[]; p: string[] }): Promise<void> {
  await takeOut(key, { confirmed: [], ...sets });
  await dynamo
    .send(
      new DeleteCommand({
        TableName: tableName(),
        Key: key,
        ConditionExpression:
          'attribute_not_exists(#k) AND attribute_not_exists(#u) AND attribute_not_exists(#p)',
        ExpressionAttributeNames: {
          '#k': ATTR.blockKeys,
          '#u': ATTR.unconfirmed,
          '#p': ATTR.pendingBlockKeys,
        },
      }),
    )
    .catch((error: unknown) => {
      if (!isConditionFailure(error)) throw error;
    });
}

/**
 * The packed keys of a block that belong in it: keys of entities the dimension lists whose number falls in this
 * block. A key the postings read whole (`listed`) name is; any other is checked against its entity, read now (after
 * the block and the pending items were): the listing was read earlier, and a create under way then (its `p` key
 * kept while its pending item is there) may have landed since, its pending item gone by the time the block is
 * looked at, so that it is in neither.
 */
async function validKeys<E>(
  run: ReindexRun<E>,
  name: string,
  key: ItemKey,
  packed: string[],
  listed: Set<string> | undefined,
): Promise<Set<string>> {
  const valid = new Set<string>();
  // A dimension that keeps no blocks (a queue, an unbounded value: dimensions.ts, hasBlocks) has none that holds
  // a key rightly.
  if (!hasBlocks(run.index.declaration as IndexDeclaration<E, unknown>, name)) return valid;
  const inBlock = (p: string) =>
    run.index.keys.block(run.accountId, name, orderKeys.parts(unpackOrderKey(p)).number).sk === key.sk;
  const own = packed.filter(inBlock);
  for (const p of own) if (listed?.has(p)) valid.add(p);
  const unlisted = own.filter((p) => !valid.has(p));
  for (const group of chunks(unlisted, run.pageSize)) {
    const entities = await run.entitiesAt(group.map(unpackOrderKey));
    for (const p of group) if (run.holds(name, entities.get(unpackOrderKey(p)))) valid.add(p);
  }
  return valid;
}
