import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { ContactTaken } from '#lib/data/contacts/contacts.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/requests/idempotency.ts';
import { ConcurrentWrite, retryOnConflict } from '#lib/data/store/errors.ts';
import {
  ContactInTrash,
  getTrashed,
  NotInTrash,
  restoreTrashed,
  type Trashed,
  type TrashType,
} from '#lib/data/trash/trash.ts';
import { presentDealDetail } from '#lib/deals/present.ts';
import type { Deal } from '#lib/deals/types.ts';
import { NotFound, Refused } from '#lib/errors.ts';
import { momentKeeper } from '#lib/rules/in-change.ts';
import { reopenedIntoGoneTeam } from '#lib/tickets/apply-change.ts';
import { againIfTeamGone } from '#lib/tickets/team-gone.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { nowMicros } from '#lib/time.ts';
import { contactOf, type Deletable, deletable } from './deletable.ts';

/** Restoring a deleted ticket, deal or contact from the trash (decisions.md, "Deleting, restoring and erasing"). */

/** A restore's answer: the object as its GET answers it, and its new version (the ETag). */
export interface Restored {
  type: TrashType;
  object: Record<string, unknown>;
  version: number;
}

export interface RestoreOptions {
  needScope?: ((type: TrashType) => void) | undefined;
  attach?: ((restored: Restored) => CommitAttachment) | undefined;
}

/** What a restore names: an object of the account in the trash, not past its purge time (else undefined). */
export async function findTrashed(
  accountId: string,
  ref: string,
  nowUs = nowMicros(),
): Promise<Trashed<unknown> | undefined> {
  const uuid = ref.trim().toLowerCase();
  if (!UUID.test(uuid)) return undefined;
  const trashed = await getTrashed<unknown>(accountId, uuid);
  return trashed && trashed.purgeMicros > nowUs ? trashed : undefined;
}

/**
 * The `restoreTrash` route: the trash item (404 when none, or past its purge time), the scope of its type
 * (`needScope`, checked before anything is written), then one commit that puts the object back as it was. An open
 * ticket whose team's deletion landed between the configuration's read and the commit (TeamGone) is decided again
 * on the configuration as it is now: it comes back with no team (asRestored, againIfTeamGone).
 */
export async function restoreObject(
  accountId: string,
  ref: string,
  options: RestoreOptions = {},
): Promise<Restored> {
  return retryOnConflict(() => againIfTeamGone(accountId, () => restoreOnce(accountId, ref, options)), {
    retryable: (error) => error instanceof ConcurrentWrite,
  });
}

/** One restore: the trash item read, the object as it comes back decided, and its commit. */
async function restoreOnce(accountId: string, ref: string, options: RestoreOptions): Promise<Restored> {
  const now = nowMicros();
  const found = await findTrashed(accountId, ref, now);
  if (!found) throw new NotFound();
  const trashed = await asRestored(accountId, found);
  const type = trashed.type as TrashType;
  options.needScope?.(type);
  const ops = deletable[type] as unknown as Deletable<unknown>;
  const restored: Restored = {
    type,
    object: await shownRestored(accountId, type, trashed, ops),
    version: trashed.version + 1,
  };
  try {
    await restoreTrashed(accountId, trashed, now, {
      attach: completionCommit(options.attach?.(restored)),
      event: { type: `${type}.restored`, object: restored.object, version: restored.version },
    });
  } catch (error) {
    if (error instanceof NotInTrash) throw new NotFound();
    if (error instanceof ContactInTrash) {
      throw new Refused("The deal's contact is in the trash: restore the contact first.");
    }
    if (error instanceof ContactTaken) {
      throw new Refused('Another contact has this e-mail now: the contact cannot be restored.');
    }
    throw error;
  }
  return restored;
}

/**
 * What a restore puts back: the object as deleted, but a ticket of open work whose team was deleted while it was in
 * the trash, which comes back in the account's queue (no team), as a reopened one does (reopenedIntoGoneTeam); and
 * a ticket with its next time-rule moment over the rules as they are now (momentKeeper): the rules written while it
 * was in the trash, and its team, may have moved it, and no moment sweep reads the trash.
 */
async function asRestored(accountId: string, trashed: Trashed<unknown>): Promise<Trashed<unknown>> {
  if (trashed.type !== 'ticket') return trashed;
  const ticket = trashed.entity as Ticket;
  const config = await getAccountConfig(accountId);
  if (!config) return trashed;
  const moment = await momentKeeper(accountId, config);
  const team = reopenedIntoGoneTeam(undefined, ticket, config) ? { team: null } : {};
  return { ...trashed, entity: moment({ ...ticket, ...team }) };
}

/** The object as its GET will answer it once restored (a contact has no deals: it had none when deleted). */
async function shownRestored(
  accountId: string,
  type: TrashType,
  trashed: Trashed<unknown>,
  ops: Deletable<unknown>,
): Promise<Record<string, unknown>> {
  if (type === 'deal') {
    const deal = trashed.entity as Deal;
    const contact = await contactOf(accountId, deal);
    if (!contact) throw new Refused("The deal's contact is in the trash: restore the contact first.");
    return presentDealDetail(deal, contact);
  }
  return ops.show(accountId, trashed.entity);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
