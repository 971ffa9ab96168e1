import type { EventDraft, ReservedPlaces } from '#lib/data/events.ts';
import { claimSourceKey, type SourceKeyRef, touchSourceKey } from '#lib/data/imports/source-keys.ts';
import { DuplicateMail, findMailId, mailIdPut } from '#lib/data/mail/message-ids.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { messagePut } from '#lib/data/tickets/messages.ts';
import { insertTicket, updateTicketItems } from '#lib/data/tickets/tickets.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { type Message, presentMessage } from '#lib/tickets/messages/message.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import type { ImportSource } from './records.ts';

/**
 * The commits of an imported ticket (lib/imports/tickets.ts): the ticket with its messages, their source keys (the
 * ticket's claimed in its own commit: two racing runs cannot both create it), the claims of their Message-IDs (a
 * reply to the old mail threads in) and their events, each with `import_id`, in one transaction where it fits
 * (MESSAGES_A_COMMIT); a longer conversation goes on in further commits of the ticket, its source key holding a
 * digest no record has until the last one lands, so a run stopped between them finds the ticket changed and
 * appends what is missing. No message is put in the outbox: an import sends no mail.
 */

/** Messages written in one commit beside the ticket: each with its key, its Message-ID and its event. */
export const MESSAGES_A_COMMIT = 20;

/** The digest a ticket's key holds while its conversation is written over several commits. */
export const PARTIAL_DIGEST = 'partial';

export interface ImportWrite {
  accountId: string;
  source: ImportSource;
  importId: string;
  /** The ticket's source id, and its record's digest. */
  sourceId: string;
  digest: string;
  /** The page's write mark, kept on the keys it claims and moves (ImportContext.mark). */
  mark?: string | undefined;
}

/** A message to write, with its source id and the Message-ID of its mail (null: none). */
export interface MessageWrite {
  message: Message;
  sourceId: string;
  mailId: string | null;
}

const ref = (w: ImportWrite, type: 'tickets' | 'messages', sourceId: string): SourceKeyRef => ({
  source: w.source,
  type,
  sourceId,
});

const imported = (w: ImportWrite, draft: EventDraft): EventDraft => ({ ...draft, importId: w.importId });

/** The items of messages (their puts, keys and Message-IDs, none in the outbox) and their events. */
function messageParts(
  w: ImportWrite,
  ticketUuid: string,
  messages: MessageWrite[],
  described?: MessageWrite,
) {
  const items: CommitAction[] = [];
  const claimed = [...(described ? [described] : []), ...messages];
  const mailIds = new Set<string>();
  for (const m of claimed) {
    items.push(
      claimSourceKey(w.accountId, ref(w, 'messages', m.sourceId), keyRecord(w, m.message.id), w.mark),
    );
    // One mail given to two comments: the first claims it (two puts of one item are no transaction).
    if (m.mailId && !mailIds.has(m.mailId.toLowerCase())) {
      mailIds.add(m.mailId.toLowerCase());
      const record = { ticketUuid, messageNumber: m.message.number, messageId: m.message.id };
      items.push(mailIdPut(w.accountId, m.mailId, record));
    }
  }
  for (const m of messages) items.push(messagePut(w.accountId, { ...m.message }));
  const events = messages.map((m) => imported(w, createdEvent('message', presentMessage(m.message))));
  return { items, events };
}

/** A key of what this import creates (never `matched`: undo trashes it). */
const keyRecord = (w: ImportWrite, objectId: string, digest = w.digest) => ({
  objectId,
  importId: w.importId,
  matched: false,
  digest,
});

/**
 * Creates the ticket with its first messages (its description's key and Message-ID among them); the rest are
 * appended by appendMessages. `more`: messages follow (the key holds PARTIAL_DIGEST until they land); `place`: the
 * places its page reserved for this commit's events (lib/imports/ticket-write.ts, reserveFresh).
 */
export async function createImportedTicket(
  w: ImportWrite,
  ticket: Ticket,
  described: MessageWrite | undefined,
  messages: MessageWrite[],
  { more, place }: { more: boolean; place?: ReservedPlaces | undefined },
): Promise<void> {
  const parts = messageParts(w, ticket.uuid, messages, described);
  const key = claimSourceKey(
    w.accountId,
    ref(w, 'tickets', w.sourceId),
    keyRecord(w, ticket.uuid, more ? PARTIAL_DIGEST : w.digest),
    w.mark,
  );
  await withoutHeldMailIds(w.accountId, [...(described ? [described] : []), ...messages], (held) =>
    insertTicket({
      accountId: w.accountId,
      ticket,
      event: imported(w, createdEvent('ticket', presentCreatedTicket(ticket))),
      moreEvents: parts.events,
      moreItems: [key, ...parts.items.filter((item) => !isHeld(item, held))],
      place,
    }),
  );
}

/**
 * One commit of a ticket found again: its fields as the source has them now and messages appended, guarded by
 * its version; `digest`: the key's digest moved from the one read (the last commit of the ticket's write).
 */
export async function updateImportedTicket(
  w: ImportWrite,
  change: { before: Ticket; after: Ticket; version: number },
  messages: MessageWrite[],
  digest: { read: string; next: string } | undefined,
): Promise<number> {
  const parts = messageParts(w, change.after.uuid, messages);
  const { before, after, version } = change;
  const touched = digest
    ? [touchSourceKey(w.accountId, ref(w, 'tickets', w.sourceId), digest.read, digest.next, w.mark)]
    : [];
  const changed = updatedEvent(
    'ticket',
    presentCreatedTicket(before),
    presentCreatedTicket(after),
    version + 1,
  );
  // A commit that only appends messages (a long conversation's next part) changes none of the ticket's fields.
  const ticketEvents = Object.keys(changed.previous ?? {}).length > 0 ? [imported(w, changed)] : [];
  return withoutHeldMailIds(w.accountId, messages, (held) =>
    updateTicketItems({
      ...{ accountId: w.accountId, before, after, version },
      items: [...touched, ...parts.items.filter((item) => !isHeld(item, held))],
      event: [...parts.events, ...ticketEvents],
    }),
  );
}

/** The Message-ID puts of ids another message already holds (the same mail imported twice at the source). */
const isHeld = (item: CommitAction, held: Set<unknown>) =>
  item.what === 'email_message_id' && held.has((item.action.Put?.Item as { pk?: unknown } | undefined)?.pk);

/**
 * A commit refused because a Message-ID is held already (the source gave one mail to two comments, or the mail
 * came in by the e-mail channel before the import): committed again without the claims of the held ones, which
 * keep threading where they did.
 */
async function withoutHeldMailIds<T>(
  accountId: string,
  messages: MessageWrite[],
  write: (held: Set<unknown>) => Promise<T>,
): Promise<T> {
  try {
    return await write(new Set());
  } catch (error) {
    if (!(error instanceof DuplicateMail)) throw error;
    const ids = messages.map((m) => m.mailId).filter((id): id is string => id !== null);
    const found = await Promise.all(ids.map(async (id) => ({ id, held: await findMailId(accountId, id) })));
    const held = new Set<unknown>();
    for (const { id, held: record } of found) {
      if (!record) continue;
      const put = mailIdPut(accountId, id, record);
      held.add((put.action.Put?.Item as { pk?: unknown } | undefined)?.pk);
    }
    return write(held);
  }
}
