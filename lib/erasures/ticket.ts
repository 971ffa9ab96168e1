import { deletePersonRef, type ErasureProgress, markTouched, messageItems } from '#lib/data/erasures.ts';
import { noteLeftDimensions } from '#lib/data/index/empty-dimensions.ts';
import { ackItem } from '#lib/data/outbox.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { momentKeeper } from '#lib/rules/in-change.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { addressHash } from './address-hash.ts';
import { refsStep } from './copies.ts';
import { eraseMailCopies, rewriteOutboxItem } from './mail-copies.ts';
import { allSettled, endObject, type Move, type MoveEnd, stepSize, toSub, unlessRaced } from './move.ts';
import { type Person, personPattern, redactValue } from './redact.ts';
import { trashedObjectStep } from './trashed.ts';

/**
 * A move on the ticket the phase chose (`uuid`): the same machinery for the person's own tickets (phase
 * `tickets`) and for the tickets their mail named though they did not request them (phase `mentions`: redacted
 * as mentioned). The ticket first (`commit`), then its messages, then its references; a mentioned ticket in the
 * trash (`trash`) is purged instead.
 */
export async function ticketMove(m: Move, uuid: string): Promise<MoveEnd | undefined> {
  const { accountId, record, p, options, count } = m;
  const mentioned = p.phase === 'mentions';
  if (p.sub === 'trash') {
    // A mentioned ticket in the trash: purged now, as the person's own (its copies erased first); restored
    // meanwhile: erased as a live one.
    const moved = await trashedObjectStep(accountId, p, 'ticket', count, options);
    if (moved === 'purged') await endMention(accountId, p, count);
    else if (moved === 'restored') toSub(p, 'commit');
    return;
  }
  if (p.sub === 'messages') {
    await messagesMove(m, uuid, mentioned);
    return;
  }
  if (p.sub === 'refs') {
    if (await refsStep(accountId, p, count, options)) {
      await markTouched(accountId, record.id, 'ticket', uuid);
      if (mentioned) await endMention(accountId, p, count);
      else endObject(p);
    }
    return;
  }
  return await commitMove(m, uuid, mentioned);
}

/** A page of the ticket's messages rewritten; after the last, its acknowledgement, and on to its references. */
async function messagesMove(m: Move, uuid: string, mentioned: boolean): Promise<void> {
  const { accountId, p, options, count } = m;
  const person = (): Person => p.person;
  const after = Number(p.subAt ?? 1);
  const page = await messageItems(accountId, uuid, after, stepSize(options));
  const pattern = personPattern(person());
  await allSettled(
    page.map(async (item) => {
      await eraseMailCopies(accountId, item, person(), pattern, count, options, !mentioned);
      if (await rewriteOutboxItem(item, person(), pattern, count, options)) count('messages');
    }),
  );
  if (page.length < stepSize(options)) {
    // The ticket's acknowledgement (an outbox item of its own, EMAIL_ACK#), then its references.
    const ack = await ackItem(accountId, uuid);
    if (ack && (await rewriteOutboxItem(ack, person(), pattern, count, options))) count('email_outbound');
    toSub(p, 'refs');
  } else p.subAt = String(page.at(-1)?.number ?? after);
}

/**
 * The ticket's own commit. The ticket first, then its messages and the copies of it (events, kept answers,
 * mail): a write landing before this commit is in what they read after it; one landing after it is a write on
 * the erased ticket.
 */
async function commitMove(m: Move, uuid: string, mentioned: boolean): Promise<'raced' | undefined> {
  const { accountId, record, p, options, count } = m;
  const person = (): Person => p.person;
  const stored = await tickets.getByUuid(accountId, uuid);
  if (stored && (mentioned || !stored.entity.requester.erased)) {
    // The description's mail first (its Message-ID's item, a copy naming the person): the commit erases the
    // fields that find them.
    await eraseMailCopies(
      accountId,
      stored.entity.descriptionEmail,
      person(),
      personPattern(person()),
      count,
      options,
      !mentioned,
    );
    // Someone else's ticket (mentioned): its requester stays, its description erased only when it is the
    // person's words (redactValue tells by the description's mail).
    const redacted = redactValue(stored.entity, person()) as Ticket;
    if (!mentioned) redacted.requester = { ...redacted.requester, email: '', erased: true };
    if (JSON.stringify(redacted) !== JSON.stringify(stored.entity)) {
      // Its next time-rule moment in the same commit: a rule's conditions may read what the erasure rewrote.
      const after = (await momentKeeper(accountId))(redacted);
      // The dimensions its values named that it leaves (a custom field holding the person's name), noted
      // first: the last phases delete what they leave once empty.
      await noteLeftDimensions(tickets.index, accountId, record.id, stored.entity, after);
      const landed = await unlessRaced(() =>
        tickets.update(accountId, { before: stored.entity, after, version: stored.version }),
      );
      if (!landed) return 'raced';
      count('tickets');
    }
  }
  toSub(p, 'messages');
}

/**
 * A mentioned ticket done: its person reference deleted (last: what found it) if it is still the one read when the
 * ticket was chosen (a mail of the person's that landed after the job read the ticket's messages wrote it again:
 * that mail is kept as written, and its reference with it, for a later erasure to find); the phase goes on.
 */
export async function endMention(accountId: string, p: ErasureProgress, count: Move['count']): Promise<void> {
  const hash = addressHash(accountId, p.person.email);
  if (await deletePersonRef(accountId, hash, p.object ?? '', p.refToken)) count('index');
  p.describedByPerson = undefined;
  p.refToken = undefined;
  endObject(p);
}
