import type { ImportErrorRow } from '#lib/imports/records.ts';
import { importKeys } from '../keys.ts';
import { batchPutAll, queryAll, tableName } from '../store/client.ts';

/**
 * A job's error rows (GET /api/imports/{import}/errors): a partition of their own, each keyed by the page that found
 * it (the job's page count when it was read) and its place in the page, written just before that page's checkpoint
 * is saved: a page read again after a crash writes the same keys, never a second row.
 */
export async function putErrorRows(
  accountId: string,
  id: string,
  page: number,
  rows: ImportErrorRow[],
): Promise<void> {
  if (rows.length === 0) return;
  await batchPutAll(
    rows.map((row, i) => ({
      ...importKeys.error(accountId, id, page, i),
      type: 'import_error',
      row: { type: row.type, sourceId: row.sourceId, reason: row.reason },
    })),
  );
}

/** Up to `limit` rows after the cursor `after` (a row's key), in the order found; `next` when more may follow. */
export async function errorRowsAfter(
  accountId: string,
  id: string,
  after: string | null,
  limit: number,
): Promise<{ rows: ImportErrorRow[]; next: string | null }> {
  const items = await queryAll(
    {
      TableName: tableName(),
      KeyConditionExpression: after === null ? 'pk = :pk' : 'pk = :pk AND sk > :after',
      ExpressionAttributeValues: {
        ':pk': importKeys.errorsPartition(accountId, id),
        ...(after === null ? {} : { ':after': after }),
      },
    },
    limit + 1,
  );
  const shown = items.slice(0, limit);
  return {
    rows: shown.map((item) => item.row as ImportErrorRow),
    next: items.length > limit ? String(shown.at(-1)?.sk) : null,
  };
}
