import type { Contact } from '#lib/accounts/types.ts';
import type { EventDraft } from '#lib/data/events.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/requests/idempotency.ts';
import { lostToRace, retryOnConflict, StaleVersion } from '#lib/data/store/errors.ts';
import { readContactDeals, type TrashFacts, type TrashType } from '#lib/data/trash/trash.ts';
import { NotFound, PreconditionFailed, Refused } from '#lib/errors.ts';
import { logError } from '#lib/log.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { checkIfMatchLength, etagOf, ifMatchHolds } from '#lib/versioned-update.ts';
import { type Deletable, deletable } from './deletable.ts';

/**
 * Deleting tickets, deals and contacts into the trash (decisions.md, "Deleting, restoring and erasing"; the
 * trash's other doors: restore.ts, list.ts, purge.ts). A deletion is a commit of the index engine
 * (lib/data/index/trash.ts): the object leaves every list, count and sum in it, and its trash item holds it as it
 * was for PURGE_AFTER_DAYS.
 */

/** Days an object stays in the trash before it and all it owns are purged. */
export const PURGE_AFTER_DAYS = 30;
const DAY_MICROS = 86_400_000_000;

/** A deletion's answer (`data`), kept as it is for a retry with the same Idempotency-Key. */
export interface Deleted {
  type: TrashType;
  uuid: string;
  deletedAt: string;
  purgeAt: string;
}

export interface DeleteOptions {
  ifMatch?: string | undefined;
  attach?: ((deleted: Deleted) => CommitAttachment) | undefined;
  /** An import's undo (lib/imports/undo.ts): its event carries the import's id, as the import's own did. */
  importId?: string | undefined;
}

const CHANGED = 'The object has changed since you read it (If-Match does not match its ETag).';

/**
 * The `delete<Type>` routes: read (404), If-Match (412), a contact's deals (409 naming how many), then one commit
 * guarded by the version read; another change landing in between: 412 with If-Match, else read again.
 */
export async function deleteObject(
  accountId: string,
  type: TrashType,
  ref: string,
  options: DeleteOptions = {},
): Promise<Deleted> {
  const ops = deletable[type] as unknown as Deletable<unknown>;
  const { ifMatch } = options;
  checkIfMatchLength(ifMatch);
  return retryOnConflict(
    async () => {
      const stored = await ops.find(accountId, ref);
      if (!stored) throw new NotFound();
      if (ifMatch !== undefined && !ifMatchHolds(ifMatch, etagOf(stored.version))) {
        throw new PreconditionFailed(CHANGED);
      }
      // A contact's deals, read before the commit, which holds only while none is created or restored meanwhile.
      const deals =
        type === 'contact'
          ? await readContactDeals(accountId, (stored.entity as Contact).id)
          : { count: 0, shards: new Map<string, number>() };
      if (deals.count > 0) throw hasDeals(deals.count);
      const deletedMicros = nowMicros();
      const purgeMicros = deletedMicros + PURGE_AFTER_DAYS * DAY_MICROS;
      const facts: TrashFacts = {
        title: ops.title(stored.entity),
        deletedMicros,
        purgeMicros,
        deletedAt: formatTimestamp(deletedMicros),
        purgeAt: formatTimestamp(purgeMicros),
      };
      const deleted: Deleted = {
        type,
        uuid: ops.uuidOf(stored.entity),
        deletedAt: facts.deletedAt,
        purgeAt: facts.purgeAt,
      };
      const event: EventDraft = {
        type: `${type}.deleted`,
        object: await ops.show(accountId, stored.entity),
        version: stored.version + 1,
        ...(options.importId === undefined ? {} : { importId: options.importId }),
      };
      try {
        await ops.write(accountId, stored, facts, {
          attach: completionCommit(options.attach?.(deleted)),
          event,
          deals,
          // The deletion landed: its answer is 200 (a 503 would have a client send it again), the failure logged.
          onCleanupFailure: logError,
        });
      } catch (error) {
        if (error instanceof StaleVersion && ifMatch !== undefined) throw new PreconditionFailed(CHANGED);
        throw error;
      }
      return deleted;
    },
    { retryable: lostToRace },
  );
}

const hasDeals = (count: number) =>
  new Refused(`The contact has ${count} deal${count === 1 ? '' : 's'}: delete or move them first.`);
