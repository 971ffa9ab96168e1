import { dimension, tickets as ticketIndex } from '#lib/data/tickets/ticket-index.ts';
import { nowMicros } from '#lib/time.ts';
import { type Move, type MoveEnd, next, startObject } from '../move.ts';
import { withIdentity } from '../redact.ts';
import { ticketMove } from '../ticket.ts';

/** A posting older than this whose ticket does not exist is an orphan (a create's commit takes seconds). */
const ORPHAN_AGE_MICROS = 60_000_000;

/**
 * Phase `tickets`: the person's own tickets, found by the postings of their address (the first one each time:
 * the ticket's erasure takes it out), each erased by ticketMove.
 */
export async function tickets(m: Move): Promise<MoveEnd | undefined> {
  const { accountId, p, count } = m;
  if (p.object !== null) return await ticketMove(m, p.object);
  const dim = dimension.email(accountId, p.person.email);
  const [first] = await ticketIndex.oldestListed(accountId, dim, { after: null, limit: 1 });
  const stored = first?.stored;
  if (!first) next(p, 'mentions');
  else if (stored?.entity.requester.email.toLowerCase() !== p.person.email) {
    // A posting no ticket of the person's holds: a failed create's marked orphan, which names the address,
    // or a create still in flight (put before its commit): left alone until its ticket is a minute old.
    if (!stored && first.createdMicros > nowMicros() - ORPHAN_AGE_MICROS) return 'raced';
    await ticketIndex.dropPosting(accountId, dim, first.at);
    count('index');
  } else {
    p.person = withIdentity(p.person, stored.entity.requester.name, stored.entity.requester.phone);
    startObject(p, stored.entity.uuid, 'commit');
    return 'checkpoint';
  }
}
