import { getCachedAccountConfig } from '#lib/accounts/config-cache.ts';
import { getTicketByNumber, getTicketByUuid } from '#lib/data/tickets/tickets.ts';
import { NotFound } from '#lib/errors.ts';
import { withCurrentOrganization } from '#lib/organizations/refs.ts';
import type { Versioned } from '#lib/versioned-update.ts';
import type { Ticket } from './types.ts';

/**
 * The `getTicket` route: by uuid (one read) or by reference, any case (`tkt-000042`: the number's term,
 * then the ticket). Unknown, malformed and other accounts' tickets are all 404.
 */
export async function getTicket(accountId: string, ref: string): Promise<Versioned<Ticket>> {
  const found = await findTicket(accountId, ref);
  if (!found) throw new NotFound();
  // Its organization under its name as it is now (one read more, only when it has one).
  return found.entity.organization
    ? { ...found, entity: await withCurrentOrganization(accountId, found.entity) }
    : found;
}

export async function findTicket(accountId: string, ref: string): Promise<Versioned<Ticket> | undefined> {
  const id = ref.trim().toLowerCase();
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) {
    return getTicketByUuid(accountId, id);
  }
  const reference = /^([a-z]{2,10})-(\d{1,15})$/.exec(id);
  if (!reference) return undefined;
  const config = await getCachedAccountConfig(accountId);
  if (!config || reference[1] !== config.account.ticketPrefix.toLowerCase()) return undefined;
  return getTicketByNumber(accountId, Number(reference[2]));
}

export { etagOf } from '#lib/versioned-update.ts';
