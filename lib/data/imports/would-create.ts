import type { ImportSource, ImportType } from '#lib/imports/records.ts';
import { nowMillis } from '#lib/time.ts';
import { importKeys } from '../keys.ts';
import { batchGetAll, batchPutAll } from '../store/client.ts';
import { table } from '../store/table.ts';
import { hashed, type SourceKeyRef } from './source-keys.ts';

/**
 * What a validate run would have created by now (docs/imports.md, "Validate"). A run creates its people before the
 * tickets that name them, and its tickets find them by their source keys; a validate run writes no key, so its
 * people writers mark each person they decided a run would create (or match) beside its key instead, and its
 * ticket writer finds them there: validate and run count the same. One small item a person, under the job's id, on
 * the key's own partition (a batch of lookups spreads as the keys' do), written again the same when a page is read
 * again; the table's TTL removes them WOULD_CREATE_DAYS later (a validate run of a large Zendesk account reads for
 * days), so nothing outlives the job's own use of them for long.
 */
export const WOULD_CREATE_DAYS = 30;

export async function markWouldCreate(
  accountId: string,
  importId: string,
  refs: readonly SourceKeyRef[],
): Promise<void> {
  const expires = Math.floor(nowMillis() / 1000) + WOULD_CREATE_DAYS * 24 * 60 * 60;
  await batchPutAll(
    refs.map((ref) => ({
      ...importKeys.wouldCreate(accountId, hashed(accountId, ref), importId),
      type: 'import_would_create',
      [table.ttlAttribute]: expires,
    })),
  );
}

/** Of `sourceIds` (one type of one source), those validate run `importId` marked as it would create. */
export async function findWouldCreate(
  accountId: string,
  importId: string,
  source: ImportSource,
  type: ImportType,
  sourceIds: readonly string[],
): Promise<Set<string>> {
  const byPk = new Map<string, string>();
  const keys = [...new Set(sourceIds)].map((sourceId) => {
    const key = importKeys.wouldCreate(accountId, hashed(accountId, { source, type, sourceId }), importId);
    byPk.set(key.pk, sourceId);
    return key;
  });
  if (keys.length === 0) return new Set();
  const items = await batchGetAll(keys, 'pk');
  return new Set(items.flatMap((item) => byPk.get(String(item.pk)) ?? []));
}
