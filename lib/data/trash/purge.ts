import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { contacts } from '../contacts/contact-index.ts';
import { deals } from '../deals/deal-index.ts';
import { isKeyedDimension } from '../index/dimensions.ts';
import { ALL_DUE_SHARDS, type DueCursors, dueSortKeys, dueWindow } from '../index/due.ts';
import { deleteEmptyDimensions } from '../index/empty-dimensions.ts';
import type { IndexedEntity } from '../index/engine.ts';
import { indexItemsOf, trashedOf } from '../index/trash.ts';
import { messageKeys, objectRefKeys, trashKeys } from '../keys.ts';
import { mailIdKeysOf } from '../mail/message-ids.ts';
import type { MailPurger } from '../mail-store.ts';
import { ackItem } from '../outbox.ts';
import { batchDeleteAll, dynamo, getItem, queryAll, tableName } from '../store/client.ts';
import { isConditionFailure } from '../store/errors.ts';
import { tickets } from '../tickets/ticket-index.ts';

/**
 * The purge (decisions.md, "Deleting, restoring and the trash"): what is in the trash past its purge time, found by
 * its purge due entry (gsi2 `PURGE_DUE#<shard>`, keys only), never by a Scan, and removed with all it owns: a
 * ticket's messages (a page of 100 at a time) with their Message-ID items and the account's copies of their mail
 * (raw mail, attachments; locally the queue's records too: MailPurger), its inbound log entries and theirs, its
 * acknowledgement (`EMAIL_ACK#`) with its Message-ID items, any index item a crash left (the terms a deletion
 * deletes after its commit), what its keyed dimensions (an address, a custom field's value) leave once no posting
 * is left in them,
 * then the trash item itself, last, so that a purge stopped anywhere is found and finished by the next pass. A
 * restore cannot race it: a restore's commit holds only before the purge time.
 */

const engines = { ticket: tickets, deal: deals, contact: contacts } as unknown as Record<
  string,
  IndexedEntity<{ uuid: string }, unknown>
>;

/** The trash items due for purge at `nowMs`, earliest first, at most `limit` (one Query per shard, at once). */
export async function duePurges(
  nowMs: number,
  limit: number,
  shards: readonly number[] = ALL_DUE_SHARDS,
): Promise<{ accountId: string; uuid: string }[]> {
  const keys = await dueSortKeys(purgeDue(nowMs), limit, shards);
  return keys.map((sk) => trashKeys.parsePurgeDue(sk));
}

/**
 * duePurges as the purge runner reads it: its window, in each due shard a page from where its last window ended
 * (lib/data/index/due.ts, dueWindow).
 */
export async function duePurgeWindow(
  nowMs: number,
  cursors: DueCursors,
  perShard?: number,
): Promise<{ entries: { accountId: string; uuid: string }[]; more: boolean }> {
  const window = await dueWindow(purgeDue(nowMs), ALL_DUE_SHARDS, cursors, perShard);
  return { entries: window.entries.map((e) => trashKeys.parsePurgeDue(e.gsi2sk)), more: window.more };
}

const purgeDue = (nowMs: number) => ({
  indexName: trashKeys.purgeDueIndex,
  partition: trashKeys.purgeDuePartition,
  before: trashKeys.purgeDueBefore(nowMs),
});

/** What one purge removed: its items, of which the ticket's messages, and the files of its mail. */
export interface Purged {
  items: number;
  messages: number;
  mailFiles: number;
}

/**
 * What one purge removed, or undefined when the trash item is gone or not yet due. `mail`: where the account's copies
 * of received mail are kept (none named: the process keeps no mail, there is none to remove).
 */
export async function purgeOne(
  accountId: string,
  uuid: string,
  nowMicros: number,
  mail?: MailPurger,
): Promise<Purged | undefined> {
  const item = await getItem(trashKeys.item(accountId, uuid));
  if (!item) return undefined;
  const trashed = trashedOf<{ uuid: string }>(item);
  if (trashed.purgeMicros > nowMicros) return undefined;
  let removed = 0;
  let messages = 0;
  let mailFiles = 0;
  // The account's copy of a received mail (its raw mail and attachments), before the item that names it.
  const purgeMail = async (inboundId: unknown) => {
    if (mail && typeof inboundId === 'string') mailFiles += await mail.purgeMail(accountId, inboundId);
  };
  const sourceOf = (item: Record<string, unknown>) =>
    (item.source as { inboundId?: unknown } | undefined)?.inboundId;
  if (trashed.type === 'ticket') {
    // The Message-ID the mail that opened it claimed (its description's mail, kept on the ticket, as the trash
    // item keeps it until last); then each mail's Message-ID items and files before the mail itself: a purge stopped
    // between the two finds the mail again.
    const opening = (trashed.entity as { descriptionEmail?: Record<string, unknown> }).descriptionEmail;
    if (opening) {
      await purgeMail(sourceOf(opening));
      const mailIds = mailIdKeysOf(accountId, opening);
      await batchDeleteAll(mailIds);
      removed += mailIds.length;
    }
    for (;;) {
      const page = await queryAll(
        {
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': messageKeys.partition(accountId, uuid) },
          ProjectionExpression: 'pk, sk, #email, #source',
          ExpressionAttributeNames: { '#email': 'email', '#source': 'source' },
        },
        100,
      );
      if (page.length === 0) break;
      for (const message of page) await purgeMail(sourceOf(message));
      const mailIds = page.flatMap((m) => mailIdKeysOf(accountId, m));
      await batchDeleteAll(mailIds);
      await batchDeleteAll(page.map((m) => ({ pk: m.pk, sk: m.sk })));
      removed += mailIds.length + page.length;
      messages += page.length;
    }
    // The inbound log's entries of its mail (found by their object reference), each with its mail's files (a
    // delivery report or an automatic mail logged on it without a message; a duplicate of one of its mails).
    removed += await deleteInboundEntries(accountId, uuid, purgeMail);
    // Its acknowledgement (sent, refused or still queued: its due entry goes with the item).
    const ack = await ackItem(accountId, uuid);
    if (ack) {
      const mailIds = mailIdKeysOf(accountId, ack);
      await batchDeleteAll([...mailIds, { pk: ack.pk, sk: ack.sk }]);
      removed += mailIds.length + 1;
    }
  }
  const engine = engines[trashed.type];
  if (engine) {
    const leftovers = indexItemsOf(engine.index, accountId, trashed.entity).map((i) => ({
      pk: i.pk,
      sk: i.sk,
    }));
    await batchDeleteAll(leftovers);
    // The dimensions of the values a person wrote (a requester's or a contact's address, a custom field's value):
    // once no posting is left in one, its counter shards, emptied blocks and directory entry name a value nothing
    // holds any more; deleted as an erasure's leftovers are (each only if still as read: a write entering the
    // dimension meanwhile cancels it, and the purge is tried again by the next pass, which finds its posting).
    const { index } = engine;
    const keyed = index
      .dimensionsOf(accountId, trashed.entity)
      .filter((dim) => isKeyedDimension(index.declaration, dim));
    removed += await deleteEmptyDimensions(index, accountId, keyed);
  }
  // Last, and only if it is still the one read (a deletion after a restore writes a new one with a later time).
  try {
    await dynamo.send(
      new DeleteCommand({
        TableName: tableName(),
        Key: trashKeys.item(accountId, uuid),
        ConditionExpression: '#v = :v',
        ExpressionAttributeNames: { '#v': 'v' },
        ExpressionAttributeValues: { ':v': trashed.version },
      }),
    );
  } catch (error) {
    if (!isConditionFailure(error)) throw error;
    return { items: removed, messages, mailFiles };
  }
  return { items: removed + 1, messages, mailFiles };
}

/**
 * Deletes a ticket's inbound log entries, found by their object reference (gsi2 `OBJECT_REFS#<acc>#<uuid>`,
 * `inbound#<id>`, keys only: the sort key is the inbound id), a page of 100 at a time, each after `purgeMail` of its
 * inbound id. Answers how many went.
 */
async function deleteInboundEntries(
  accountId: string,
  ticketUuid: string,
  purgeMail: (inboundId: unknown) => Promise<void>,
): Promise<number> {
  let removed = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamo.send(
      new QueryCommand({
        TableName: tableName(),
        IndexName: objectRefKeys.index,
        KeyConditionExpression: 'gsi2pk = :pk AND begins_with(gsi2sk, :kind)',
        ExpressionAttributeValues: {
          ':pk': objectRefKeys.partition(accountId, ticketUuid),
          ':kind': 'inbound#',
        },
        Limit: 100,
        ...(start ? { ExclusiveStartKey: start } : {}),
      }),
    );
    const keys = (page.Items ?? []).map((i) => ({ pk: i.pk, sk: i.sk }));
    for (const key of keys) await purgeMail(key.sk);
    await batchDeleteAll(keys);
    removed += keys.length;
    start = page.LastEvaluatedKey;
  } while (start);
  return removed;
}
