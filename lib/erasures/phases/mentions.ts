import { deletePersonRef, type ErasureProgress, personRefs, personRefToken } from '#lib/data/erasures.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { getTrashed } from '#lib/data/trash/trash.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { addressHash } from '../address-hash.ts';
import { rewriteInbound } from '../copies.ts';
import type { StepOptions } from '../job.ts';
import { type Move, type MoveEnd, next, startObject, stepSize } from '../move.ts';
import { personPattern } from '../redact.ts';
import { ticketMove } from '../ticket.ts';

/**
 * Phase `mentions`: the tickets the person's mail named though they did not request them, and their mail that
 * opened no ticket, found by their person references; each ticket erased as mentioned by ticketMove.
 */
export async function mentions(m: Move): Promise<MoveEnd | undefined> {
  const { accountId, p, count, options } = m;
  if (p.object === null) return await nextMention(accountId, p, count, options);
  return await ticketMove(m, p.object);
}

/**
 * The mentions phase between objects: the next page of the person's references (gsi2 `PERSON_REFS#<acc>#<hash>`,
 * after the last one taken, `at`). An inbound log entry (a mail of theirs that opened no ticket) is erased at once
 * and loses its reference in the same Put; a ticket is chosen (live: erased as mentioned; in the trash: purged),
 * its reference deleted once it is done; a reference to a ticket no longer anywhere (purged) is deleted.
 */
async function nextMention(
  accountId: string,
  p: ErasureProgress,
  count: Move['count'],
  options: StepOptions,
): Promise<number | 'checkpoint'> {
  const hash = addressHash(accountId, p.person.email);
  const refs = await personRefs(accountId, hash, p.at, stepSize(options));
  if (refs.length === 0) {
    next(p, 'deals');
    return 1;
  }
  let work = 1;
  for (const ref of refs) {
    const { kind, id } = ref;
    if (kind === 'ticket') {
      const live = await tickets.getByUuid(accountId, id);
      const ticket = live?.entity ?? (await getTrashed<Ticket>(accountId, id))?.entity;
      if (ticket) {
        // Chosen and saved before its commit, with whether its description is the person's (a follow-up their
        // mail opened): the commit erases the mail fields that tell it, and its copies are rewritten after; and
        // with its reference's token, read before its messages are.
        p.refToken = await personRefToken(accountId, hash, id);
        p.at = ref.ref;
        startObject(p, id, live ? 'commit' : 'trash');
        const from = (ticket.descriptionEmail?.email?.from as { email?: string } | undefined)?.email;
        p.describedByPerson = from?.toLowerCase() === p.person.email ? true : undefined;
        return 'checkpoint';
      }
      await deletePersonRef(accountId, hash, id);
      count('index');
    } else if (kind === 'inbound') {
      await rewriteInbound(accountId, ref, p.person, personPattern(p.person), count, options, true, false);
    }
    p.at = ref.ref;
    work++;
  }
  return work;
}
