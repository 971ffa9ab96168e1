import { type ErasureProgress, messageItems, objectRefs } from '#lib/data/erasures.ts';
import { ackItem } from '#lib/data/outbox.ts';
import { purgeOne } from '#lib/data/trash/purge.ts';
import { getTrashed, holdTrashed, type TrashType } from '#lib/data/trash/trash.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { rewriteRef } from './copies.ts';
import type { StepOptions } from './job.ts';
import { eraseMailCopies, sentMessageId } from './mail-copies.ts';
import { allSettled, type Move, stepSize } from './move.ts';
import { personPattern } from './redact.ts';

/**
 * One move on a trashed object of the person's (or a ticket their mail named) before its purge: first the hold
 * (its trash item made unrestorable, on the condition that it is the one read: a restore can no longer put back
 * what the purge is taking), its copies (`refs#…`), its mail (`sent#…`: the sent copies, Message-IDs and received
 * copies naming the person, its acknowledgement), then the purge itself. 'purged' once done (or found purged),
 * 'restored' when a restore landed before the hold (the object is live: the caller erases it as such), false
 * while there are moves to go.
 */
export async function trashedObjectStep(
  accountId: string,
  p: ErasureProgress,
  type: TrashType,
  count: Move['count'],
  options: StepOptions,
): Promise<'purged' | 'restored' | false> {
  const uuid = p.object ?? '';
  if (p.subAt === null) {
    const held = await holdTrashed(accountId, uuid, type);
    if (held === 'restored') return 'restored';
    if (held === 'gone') return 'purged';
    // Raced (restored and deleted again, or restored just now): the next move reads it again.
    if (held === 'held') p.subAt = 'refs';
    return false;
  }
  if (p.subAt.startsWith('refs')) {
    const refs = await objectRefs(
      accountId,
      uuid,
      p.subAt === 'refs' ? null : p.subAt.slice(5),
      stepSize(options),
    );
    await allSettled(refs.map((ref) => rewriteRef(accountId, ref, p, count, options)));
    if (refs.length < stepSize(options)) p.subAt = 'sent#0';
    else p.subAt = `refs#${refs.at(-1)?.ref}`;
    return false;
  }
  if (p.subAt.startsWith('sent#')) {
    // A trashed ticket's mail, before its purge: the kept copies of what was sent (by the messages' ids: the purge
    // does not reach them) and the received mail naming the person (erased as on a live ticket; the purge then
    // removes the account's copies of the ticket's received mail), then its acknowledgement's copy (the purge
    // deletes the acknowledgement and every Message-ID item of the ticket).
    const after = Number(p.subAt.slice(5));
    const page = await messageItems(accountId, uuid, after, stepSize(options));
    const pattern = personPattern(p.person);
    await allSettled(
      page.map(async (item) => {
        await eraseMailCopies(accountId, item, p.person, pattern, count, options, p.phase !== 'mentions');
        const id = sentMessageId(item);
        if (id && options.mail) count('mail', await options.mail.eraseSent(id));
      }),
    );
    if (page.length === stepSize(options)) {
      p.subAt = `sent#${page.at(-1)?.number ?? after}`;
      return false;
    }
    const trashed = await getTrashed<Ticket>(accountId, uuid);
    await eraseMailCopies(
      accountId,
      trashed?.entity.descriptionEmail,
      p.person,
      pattern,
      count,
      options,
      p.phase !== 'mentions',
    );
    const ack = await ackItem(accountId, uuid);
    if (ack) {
      const id = sentMessageId(ack);
      if (id && options.mail) count('mail', await options.mail.eraseSent(id));
      count('email_outbound');
    }
    p.subAt = 'purge';
    return false;
  }
  const removed = await purgeOne(accountId, uuid, Number.MAX_SAFE_INTEGER, options.mail);
  count('trash', removed === undefined ? 0 : 1);
  count('messages', removed?.messages ?? 0);
  return 'purged';
}
