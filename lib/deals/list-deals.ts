import { findContactByEmail } from '#lib/data/contacts/contacts.ts';
import { findDealPage } from '#lib/data/deals/deals.ts';
import { type ListUrl, paginate, withinReadBudget } from '#lib/pagination.ts';
import { searchWords } from '#lib/search.ts';
import type { DealListQuery } from './list-query.ts';
import { presentDealDetail } from './present.ts';

/**
 * The `listDeals` route: filtered, searched, paginated, newest first, each deal with its contact as it is now. A
 * contact_email names a contact (one read); an e-mail no contact has lists nothing.
 */
export async function listDeals(accountId: string, query: DealListQuery, at: ListUrl) {
  let contactId: number | undefined;
  if (query.contactEmail !== undefined) {
    const contact = await findContactByEmail(accountId, query.contactEmail);
    if (!contact) return paginate([], 0, query, at);
    contactId = contact.id;
  }
  const { total, deals, contacts } = await withinReadBudget(
    findDealPage(accountId, {
      filter: {
        ...(query.pipelineId !== undefined ? { pipelineId: query.pipelineId } : {}),
        ...(query.stageId !== undefined ? { stageId: query.stageId } : {}),
        ...(query.status ? { status: query.status } : {}),
        ...(query.currency ? { currency: query.currency } : {}),
        ...(contactId !== undefined ? { contactId } : {}),
      },
      words: query.search ? searchWords(query.search) : [],
      offset: (query.page - 1) * query.perPage,
      limit: query.perPage,
    }),
  );
  return paginate(
    deals.map((d) => presentDealDetail(d, contacts.get(d.contact.id))),
    total,
    query,
    at,
  );
}
