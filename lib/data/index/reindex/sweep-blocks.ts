import { NUMBERS_PER_BLOCK, orderKeys } from '../../keys.ts';
import { batchDeleteAll, batchPutAll } from '../../store/client.ts';
import { ATTR, chunks, type ItemKey } from '../../store/items.ts';
import type { IndexDeclaration } from '../declaration.ts';
import { hasBlocks } from '../dimensions.ts';
import { unpackOrderKey } from '../order-key.ts';
import { blockItem } from '../totals.ts';
import { pagesOf } from './pages.ts';
import type { DimensionProgress, ReindexRun } from './run.ts';

/**
 * The sweep's second part of a dimension (sweep.ts): its blocks, rewritten to the keys of entities they hold
 * (checked against the postings just read whole, `listed`, or against the entities), or deleted (a block its
 * updates emptied, or one of the earlier layout), page by page, the cursor saved after each page.
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
    for (const block of blocks) {
      const key = { pk: block.pk as string, sk: block.sk as string };
      const packed = [
        ...new Set([
          ...((block[ATTR.blockKeys] as Set<string> | undefined) ?? []),
          ...((block[ATTR.unconfirmed] as Set<string> | undefined) ?? []),
        ]),
      ];
      const valid = await validKeys(run, dimension.name, key, packed, listed);
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
    await run.save();
  }
}

/**
 * The packed keys of a block that belong in it: keys of entities the dimension lists (as the postings read whole
 * name them, or as the entities read a page at a time are) whose number falls in this block.
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
  if (listed) {
    for (const p of packed) if (listed.has(p) && inBlock(p)) valid.add(p);
  } else {
    for (const group of chunks(packed, run.pageSize)) {
      const entities = await run.entitiesAt(group.map(unpackOrderKey));
      for (const p of group) if (run.holds(name, entities.get(unpackOrderKey(p))) && inBlock(p)) valid.add(p);
    }
  }
  return valid;
}
