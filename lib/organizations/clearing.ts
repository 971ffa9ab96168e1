import type { Contact } from '#lib/accounts/types.ts';
import { FUNCTION_TIMEOUT_MS } from '#lib/config/timeouts.ts';
import { presentContact } from '#lib/contacts/present.ts';
import { dropOrganizationContact, organizationContacts, updateContact } from '#lib/data/contacts/contacts.ts';
import { openDealCounts } from '#lib/data/deals/deals.ts';
import type { Listed } from '#lib/data/index/oldest.ts';
import { StaleVersion } from '#lib/data/store/errors.ts';
import { dropOrganizationTicket, organizationTickets } from '#lib/data/tickets/tickets.ts';
import { updatedEvent } from '#lib/events/drafts.ts';
import { commitFollowUp } from '#lib/tickets/follow-up-update.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';

/**
 * Clearing a deleted organization (decisions.md, "People: agents, teams and organizations"): its tickets and
 * contacts lose their `organization`, each in its own versioned commit with its `ticket.updated` or
 * `contact.updated`. A step takes one page of each (found by the `organization` dimension, oldest first), so its
 * work is bounded; what it cleared leaves the dimension in the same commit, so the next step (after a crash too)
 * finds only what is left: the store is the cursor.
 */

/** Tickets and contacts a step clears, of each. */
export const CLEARING_STEP = 25;

/**
 * How long after a deletion a clearing stays open though it finds nothing: a create or PATCH that read the
 * organization before it was deleted commits within its function's time (FUNCTION_TIMEOUT_MS), and is then
 * found by the clearing's last pass. A posting no entity holds is dropped once it is this old (a failed create's).
 */
export const CLEARING_GRACE_MS = 3 * FUNCTION_TIMEOUT_MS;

/** One step: a page of the organization's tickets and of its contacts cleared; `more` while any was listed. */
export async function clearingStep(
  accountId: string,
  organizationId: number,
  nowMs: number,
): Promise<'more' | 'done'> {
  const [ticketsLeft, contactsLeft] = await Promise.all([
    clearPage(organizationTickets(accountId, organizationId, CLEARING_STEP), nowMs, {
      clear: (stored) => clearTicket(accountId, stored),
      drop: (at) => dropOrganizationTicket(accountId, organizationId, at),
      holds: (t: Ticket) => t.organization?.id === organizationId,
    }),
    clearPage(organizationContacts(accountId, organizationId, CLEARING_STEP), nowMs, {
      clear: (stored) => clearContact(accountId, stored),
      drop: (at) => dropOrganizationContact(accountId, organizationId, at),
      holds: (c: Contact) => c.organization?.id === organizationId,
    }),
  ]);
  return ticketsLeft || contactsLeft ? 'more' : 'done';
}

/**
 * Clears each entity of a page, all at once (each its own commit: they share no item but the account's event
 * shard's counter, which each takes a place of); answers whether the page listed any. A change that landed first
 * (StaleVersion) is left for the next step, which reads it again.
 */
async function clearPage<E>(
  page: Promise<Listed<E>[]>,
  nowMs: number,
  how: {
    clear: (stored: { entity: E; version: number }) => Promise<unknown>;
    drop: (at: string) => Promise<unknown>;
    holds: (entity: E) => boolean;
  },
): Promise<boolean> {
  const listed = await page;
  // Every commit settled before the step answers (a failure is thrown once the others have landed or failed).
  const settled = await Promise.allSettled(
    listed.map(async ({ at, createdMicros, stored }) => {
      if (!stored) {
        // A create in flight holds its posting before its commit lands; one this old never will.
        if (nowMs - createdMicros / 1000 > CLEARING_GRACE_MS) await how.drop(at);
        return;
      }
      if (!how.holds(stored.entity)) return;
      await how.clear(stored).catch((error: unknown) => {
        if (!(error instanceof StaleVersion)) throw error;
      });
    }),
  );
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return listed.length > 0;
}

/** A ticket without its organization, in one commit guarded by the version read, with its `ticket.updated`. */
function clearTicket(accountId: string, stored: { entity: Ticket; version: number }) {
  return commitFollowUp(accountId, stored, (ticket) => {
    const after = { ...ticket };
    delete after.organization;
    return after;
  });
}

/** A contact without its organization, as clearTicket, with its `contact.updated` (its open deals counted). */
async function clearContact(accountId: string, stored: { entity: Contact; version: number }) {
  const { entity: before, version } = stored;
  const after: Contact = { ...before, updatedAt: formatTimestamp(nowMicros()) };
  delete after.organization;
  const deals = (await openDealCounts(accountId, [before.id])).get(before.id) ?? 0;
  await updateContact(
    accountId,
    { before, after, version },
    {
      event: updatedEvent(
        'contact',
        presentContact(before, deals),
        presentContact(after, deals),
        version + 1,
      ),
    },
  );
}
