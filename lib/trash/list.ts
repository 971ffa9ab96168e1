import * as v from 'valibot';
import { listTrash, TRASH_TYPES } from '#lib/data/trash/trash.ts';
import { param, picked, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { parseInput } from '#lib/validation.ts';

/** A trash cursor: the last item's list key (deletion microseconds, 17 digits, and its uuid). */
const CURSOR = /^\d{17}#[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The `listTrash` route's query: `type` (one of the three), `after` (a cursor it answered), `limit` (1..100). */
export const TrashQueryParams = v.object({
  type: param('type', picked('type', TRASH_TYPES), v.picklist(TRASH_TYPES)),
  after: param(
    'after',
    v.pipe(v.string(), v.regex(CURSOR, 'The after field must be a cursor this list answered.')),
    v.pipe(v.string(), v.maxLength(54), v.regex(CURSOR)),
  ),
  limit: param('limit', wholeNumber('limit', 1, 100), wholeNumberWire(1, 100)),
});

/**
 * The `listTrash` route: newest deletion first, for what is deleted and not yet purged, with a cursor (the last
 * item's deletion time and uuid). Each page is one Query per type shown, all at once: O(page).
 */
export async function listTrashPage(accountId: string, query: Record<string, string[]>) {
  const q = parseInput(TrashQueryParams, query);
  const types = q.type ? [q.type] : [...TRASH_TYPES];
  const page = await listTrash(accountId, types, q.after, q.limit ?? 50);
  return {
    data: page.items.map((t) => ({
      uuid: t.uuid,
      type: t.type,
      title: t.title,
      deleted_at: t.deletedAt,
      purge_at: t.purgeAt,
    })),
    next_cursor: page.next ?? null,
  };
}
