import * as v from 'valibot';
import { fullName } from '#lib/accounts/contact-name.ts';
import type { Contact } from '#lib/accounts/types.ts';
import { findContact } from '#lib/contacts/contacts.ts';
import { presentContact } from '#lib/contacts/present.ts';
import { ContactTaken, getStoredContacts } from '#lib/data/contacts.ts';
import { ConcurrentWrite, retryOnConflict, StaleVersion } from '#lib/data/errors.ts';
import type { EventDraft } from '#lib/data/events.ts';
import { type CommitAttachment, completionCommit } from '#lib/data/idempotency.ts';
import type { Versioned } from '#lib/data/items.ts';
import {
  type ContactDeals,
  ContactInTrash,
  deleteContact,
  deleteDeal,
  deleteTicket,
  getTrashed,
  listTrash,
  NotInTrash,
  readContactDeals,
  restoreTrashed,
  TRASH_TYPES,
  type Trashed,
  type TrashFacts,
  type TrashType,
} from '#lib/data/trash.ts';
import { findDeal } from '#lib/deals/get-deal.ts';
import { presentDealDetail } from '#lib/deals/present.ts';
import type { Deal } from '#lib/deals/types.ts';
import { NotFound, PreconditionFailed, Refused, ValidationFailed } from '#lib/errors.ts';
import { param, picked, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { etagOf, ifMatchHolds, MAX_IF_MATCH_LENGTH } from '#lib/versioned-update.ts';

/**
 * Deleting and restoring tickets, deals and contacts, and the trash (decisions.md, "Deleting, restoring and
 * erasing"). A deletion is a commit of the index engine (lib/data/index/trash.ts): the object leaves every list,
 * count and sum in it, and its trash item holds it as it was for PURGE_AFTER_DAYS.
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
}

const CHANGED = 'The object has changed since you read it (If-Match does not match its ETag).';

/** What each type's deletion needs: how it is found, shown, titled and deleted. */
interface Deletable<E> {
  find(accountId: string, ref: string): Promise<Versioned<E> | undefined>;
  uuidOf(entity: E): string;
  title(entity: E): string;
  /** The object as its GET answers it. */
  show(accountId: string, entity: E): Promise<Record<string, unknown>>;
  write(
    accountId: string,
    stored: Versioned<E>,
    facts: TrashFacts,
    options: { attach?: ReturnType<typeof completionCommit>; event: EventDraft; deals: ContactDeals },
  ): Promise<void>;
}

const contactOf = async (accountId: string, deal: Deal): Promise<Contact | undefined> =>
  (await getStoredContacts(accountId, [deal.contact.id]))[0]?.entity;

const deletable: { [T in TrashType]: Deletable<never> } = {
  ticket: {
    find: findTicket,
    uuidOf: (t: Ticket) => t.uuid,
    title: (t: Ticket) => t.subject,
    show: async (_accountId: string, t: Ticket) => presentCreatedTicket(t),
    write: deleteTicket,
  } satisfies Deletable<Ticket>,
  deal: {
    find: findDeal,
    uuidOf: (d: Deal) => d.uuid,
    title: (d: Deal) => d.name,
    show: async (accountId: string, d: Deal) => presentDealDetail(d, await contactOf(accountId, d)),
    write: deleteDeal,
  } satisfies Deletable<Deal>,
  contact: {
    find: findContact,
    uuidOf: (c: Contact) => c.uuid,
    title: (c: Contact) => fullName(c.firstName, c.lastName),
    // A contact is deleted only when it has no deals: none are open.
    show: async (_accountId: string, c: Contact) => presentContact(c, 0),
    write: deleteContact,
  } satisfies Deletable<Contact>,
} as never;

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
  if (ifMatch !== undefined && ifMatch.length > MAX_IF_MATCH_LENGTH) {
    throw ValidationFailed.field(
      'if_match',
      `The If-Match header must not be greater than ${MAX_IF_MATCH_LENGTH} characters.`,
    );
  }
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
      };
      try {
        await ops.write(accountId, stored, facts, {
          attach: completionCommit(options.attach?.(deleted)),
          event,
          deals,
        });
      } catch (error) {
        if (error instanceof StaleVersion && ifMatch !== undefined) throw new PreconditionFailed(CHANGED);
        throw error;
      }
      return deleted;
    },
    { retryable: (error) => error instanceof StaleVersion || error instanceof ConcurrentWrite },
  );
}

const hasDeals = (count: number) =>
  new Refused(`The contact has ${count} deal${count === 1 ? '' : 's'}: delete or move them first.`);

/** A restore's answer: the object as its GET answers it, and its new version (the ETag). */
export interface Restored {
  type: TrashType;
  object: Record<string, unknown>;
  version: number;
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
 * (`needScope`, checked before anything is written), then one commit that puts the object back as it was.
 */
export async function restoreObject(
  accountId: string,
  ref: string,
  options: {
    needScope?: ((type: TrashType) => void) | undefined;
    attach?: ((restored: Restored) => CommitAttachment) | undefined;
  } = {},
): Promise<Restored> {
  return retryOnConflict(
    async () => {
      const now = nowMicros();
      const trashed = await findTrashed(accountId, ref, now);
      if (!trashed) throw new NotFound();
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
    },
    { retryable: (error) => error instanceof ConcurrentWrite },
  );
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
