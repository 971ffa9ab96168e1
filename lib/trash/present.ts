import type { TrashType } from '#lib/data/trash/trash.ts';
import { etagOf } from '#lib/versioned-update.ts';
import type { Deleted } from './delete.ts';
import type { Restored } from './restore.ts';

/** The answers of a deletion and a restore. */

const TYPE_NAMES: Record<TrashType, string> = { ticket: 'Ticket', deal: 'Deal', contact: 'Contact' };

/** The deletion's answer: 200 `{"message": "<Type> deleted.", "data": {"uuid", "deleted_at", "purge_at"}}`. */
export function presentDeleted(deleted: Deleted) {
  return {
    statusCode: 200,
    body: {
      message: `${TYPE_NAMES[deleted.type]} deleted.`,
      data: { uuid: deleted.uuid, deleted_at: deleted.deletedAt, purge_at: deleted.purgeAt },
    },
  };
}

/** The restore's answer: 200 `{"message": "<Type> restored.", "data": <the object as GET answers it>}`, its ETag. */
export function presentRestored(restored: Restored) {
  return {
    statusCode: 200,
    body: { message: `${TYPE_NAMES[restored.type]} restored.`, data: restored.object },
    headers: { ETag: etagOf(restored.version) },
  };
}
