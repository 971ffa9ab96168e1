import type { Contact } from '#lib/accounts/types.ts';
import type { Deal } from '#lib/deals/types.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { contactItemKey, contacts } from '../contacts/contact-index.ts';
import { releaseEmail, takeEmail } from '../contacts/contacts.ts';
import { deals } from '../deals/deal-index.ts';
import type { EventDraft } from '../events.ts';
import { filterDimensions } from '../index/dimensions.ts';
import type { IndexedEntity } from '../index/engine.ts';
import { makeUnrestorable, NotInTrash, type Trashed, type TrashFacts, trashedOf } from '../index/trash.ts';
import { type CleanupFailed, writePlan } from '../index/write-plan.ts';
import { COUNTER_SHARDS, trashKeys } from '../keys.ts';
import { getItem, queryAll, tableName } from '../store/client.ts';
import { ConcurrentWrite } from '../store/errors.ts';
import { ATTR, type Versioned } from '../store/items.ts';
import type { CommitAction } from '../store/transact.ts';
import { tickets } from '../tickets/ticket-index.ts';
import { teamEntered } from '../tickets/tickets.ts';

export type { Trashed, TrashFacts } from '../index/trash.ts';
/**
 * Deleting, restoring and listing the trash of tickets, deals and contacts: the index engine does the work
 * (lib/data/index/trash.ts); what is here is what a type adds (a contact's e-mail item and its deals, a deal's
 * contact) and the trash's reads.
 */
export { NotInTrash } from '../index/trash.ts';

export type TrashType = 'ticket' | 'deal' | 'contact';
export const TRASH_TYPES: readonly TrashType[] = ['ticket', 'deal', 'contact'];

/** A deal's contact is in the trash (or gone): the deal cannot be restored until the contact is. */
export class ContactInTrash extends Error {
  constructor() {
    super("The deal's contact is in the trash");
  }
}

export interface DeleteOptions {
  attach?: CommitAction[] | undefined;
  event: EventDraft;
  /** A failure to delete the search terms that did not fit the landed commit (writePlan): the purge's to finish. */
  onCleanupFailure?: ((error: CleanupFailed) => void) | undefined;
}

const engineOf = {
  ticket: tickets,
  deal: deals,
  contact: contacts,
} as unknown as Record<TrashType, IndexedEntity<{ uuid: string }, unknown>>;

export async function deleteTicket(
  accountId: string,
  stored: Versioned<Ticket>,
  facts: TrashFacts,
  options: DeleteOptions,
): Promise<void> {
  await writePlan(
    tickets.planDelete(accountId, stored, facts, { attach: options.attach, events: [options.event] }),
    options,
  );
}

export async function deleteDeal(
  accountId: string,
  stored: Versioned<Deal>,
  facts: TrashFacts,
  options: DeleteOptions,
): Promise<void> {
  await writePlan(
    deals.planDelete(accountId, stored, facts, { attach: options.attach, events: [options.event] }),
    options,
  );
}

/** The dimension of a contact's deals (every status): its counter counts the deals not in the trash. */
export const contactDealsDimension = (accountId: string, contactId: number) =>
  filterDimensions(deals.index.declaration, accountId, { contactId })[0] as string;

/** A contact's deals (open, won or lost, not in the trash): their count, and each counter shard as read. */
export interface ContactDeals {
  count: number;
  /** The counter's shards as read (sort key → count): the deletion's commit holds only while none moved. */
  shards: Map<string, number>;
}

/** How many deals a contact has: its deals counter's shards (one strongly consistent Query). */
export async function readContactDeals(accountId: string, contactId: number): Promise<ContactDeals> {
  const dim = contactDealsDimension(accountId, contactId);
  const keys = deals.index.keys;
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: {
      ':pk': keys.postingPartition(accountId, dim),
      ':from': keys.counterRange.from,
      ':to': keys.counterRange.to,
    },
    ConsistentRead: true,
  });
  const shards = new Map(items.map((item) => [String(item.sk), Number(item[ATTR.count] ?? 0)]));
  return { count: [...shards.values()].reduce((a, b) => a + b, 0), shards };
}

/**
 * Deletes a contact that had no deals when read: its e-mail item released with it, and a check on every shard of
 * its deals counter in the same commit that the shard is as read (a deal created or restored meanwhile moves one:
 * ConcurrentWrite, and the caller reads again). Deal creates check their contact exists (lib/data/deals/deals.ts).
 */
export async function deleteContact(
  accountId: string,
  stored: Versioned<Contact>,
  facts: TrashFacts,
  options: DeleteOptions & { deals: ContactDeals },
): Promise<void> {
  const dim = contactDealsDimension(accountId, stored.entity.id);
  const unmoved = Array.from({ length: COUNTER_SHARDS }, (_, shard): CommitAction => {
    const key = deals.index.keys.counter(accountId, dim, shard);
    const seen = options.deals.shards.get(key.sk);
    return {
      what: 'contact_deals',
      action: {
        ConditionCheck: {
          TableName: tableName(),
          Key: key,
          ConditionExpression: seen === undefined ? 'attribute_not_exists(pk)' : '#n = :seen',
          ...(seen === undefined
            ? {}
            : {
                ExpressionAttributeNames: { '#n': ATTR.count },
                ExpressionAttributeValues: { ':seen': seen },
              }),
        },
      },
      refused: () => new ConcurrentWrite(),
    };
  });
  await writePlan(
    contacts.planDelete(accountId, stored, facts, {
      attach: [releaseEmail(accountId, stored.entity), ...unmoved, ...(options.attach ?? [])],
      events: [options.event],
    }),
    options,
  );
}

/** The trash item of a uuid (one strongly consistent GetItem), or undefined. */
export async function getTrashed<E>(accountId: string, uuid: string): Promise<Trashed<E> | undefined> {
  const item = await getItem(trashKeys.item(accountId, uuid));
  return item ? trashedOf<E>(item) : undefined;
}

/**
 * An erasure's hold on a trashed object before it erases its copies and purges it: the trash item made
 * unrestorable (makeUnrestorable). `held`; `raced` (the item changed between the read and the hold: read again);
 * `restored` (no trash item, the object is live: a restore landed first, it is erased as a live one); `gone`
 * (neither: purged already).
 */
export async function holdTrashed(
  accountId: string,
  uuid: string,
  type: TrashType,
): Promise<'held' | 'raced' | 'restored' | 'gone'> {
  const trashed = await getTrashed<unknown>(accountId, uuid);
  if (trashed) return (await makeUnrestorable(accountId, trashed)) ? 'held' : 'raced';
  const live = await engineOf[type]?.getByUuid(accountId, uuid);
  return live ? 'restored' : 'gone';
}

/**
 * Restores what a trash item holds, through its type's engine: a contact takes its e-mail again (ContactTaken
 * when another contact holds it now); a deal needs its contact out of the trash (ContactInTrash); an open ticket
 * enters its team's open work as a create does, refused on a deleted team's closed cell (TeamGone).
 */
export async function restoreTrashed(
  accountId: string,
  trashed: Trashed<unknown>,
  nowMicros: number,
  options: DeleteOptions,
): Promise<void> {
  const type = trashed.type as TrashType;
  const extra: CommitAction[] = [];
  if (type === 'contact') extra.push(takeEmail(accountId, trashed.entity as Contact));
  if (type === 'deal') {
    extra.push({
      what: 'deal_contact',
      action: {
        ConditionCheck: {
          TableName: tableName(),
          Key: contactItemKey(accountId, (trashed.entity as Deal).contact.id),
          ConditionExpression: 'attribute_exists(pk)',
        },
      },
      refused: () => new ContactInTrash(),
    });
  }
  const engine = engineOf[type];
  if (!engine) throw new NotInTrash();
  await writePlan(
    engine.planRestore(accountId, trashed as Trashed<{ uuid: string }>, nowMicros, {
      attach: [...extra, ...(options.attach ?? [])],
      events: [options.event],
      closed: type === 'ticket' ? teamEntered(trashed.entity as Ticket) : undefined,
    }),
  );
}

/** A trash page: newest deletion first. The cursor is the last item's list key (deletion time and uuid). */
export interface TrashPage {
  items: Trashed<unknown>[];
  next: string | undefined;
}

/**
 * A page of the account's trash, newest deletion first: one Query of its type's list (gsi1) for `limit` + 1
 * items, or of each type's, all at once (one round trip), merged: O(page) whatever the trash holds.
 */
export async function listTrash(
  accountId: string,
  types: readonly TrashType[],
  after: string | undefined,
  limit: number,
): Promise<TrashPage> {
  const pages = await Promise.all(
    types.map((type) =>
      queryAll(
        {
          TableName: tableName(),
          IndexName: trashKeys.listIndex,
          KeyConditionExpression: after === undefined ? 'gsi1pk = :pk' : 'gsi1pk = :pk AND gsi1sk < :after',
          ExpressionAttributeValues: {
            ':pk': trashKeys.listPartition(accountId, type),
            ...(after === undefined ? {} : { ':after': after }),
          },
          ScanIndexForward: false,
        },
        limit + 1,
      ),
    ),
  );
  const merged = pages
    .flat()
    .sort((a, b) => (String(a.gsi1sk) < String(b.gsi1sk) ? 1 : String(a.gsi1sk) > String(b.gsi1sk) ? -1 : 0));
  const page = merged.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map((item) => trashedOf(item)),
    next: merged.length > limit && last ? String(last.gsi1sk) : undefined,
  };
}
