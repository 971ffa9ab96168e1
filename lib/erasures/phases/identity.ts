import { dimension, tickets } from '#lib/data/tickets/ticket-index.ts';
import { type Move, next, stepSize } from '../move.ts';
import { withIdentity } from '../redact.ts';

/**
 * Phase `identity`: every name and phone the person's tickets give them, before anything is rewritten: an object
 * rewritten with fewer identifiers than a later ticket teaches would keep those (in it, its events, its kept
 * answers). A page of their tickets a move, oldest first (each read, in parallel); resumed after the page's last.
 */
export async function identity({ accountId, p, options, worked }: Move): Promise<undefined> {
  const page = await tickets.oldestListed(accountId, dimension.email(accountId, p.person.email), {
    after: p.at,
    limit: stepSize(options),
  });
  for (const { stored } of page) {
    const requester = stored?.entity.requester;
    if (requester?.email.toLowerCase() === p.person.email) {
      p.person = withIdentity(p.person, requester.name, requester.phone);
    }
  }
  worked(page.length);
  if (page.length === 0) next(p, 'tickets');
  else p.at = page.at(-1)?.at ?? null;
}
