import { deals as dealIndex } from '#lib/data/deals/deal-index.ts';
import { markTouched } from '#lib/data/erasures.ts';
import { noteLeftDimensions } from '#lib/data/index/empty-dimensions.ts';
import { contactDealsDimension } from '#lib/data/trash/trash.ts';
import type { Deal } from '#lib/deals/types.ts';
import { refsStep } from '../copies.ts';
import { endObject, type Move, type MoveEnd, next, startObject, toSub, unlessRaced } from '../move.ts';
import { redactValue } from '../redact.ts';

/**
 * Phase `deals`: the deals of the person's contact, found by the contact's deal postings (onwards from the last
 * one taken), each rewritten without the contact's name, address and phone, then its references.
 */
export async function deals(m: Move): Promise<MoveEnd | undefined> {
  const { accountId, record, p, options, count } = m;
  if (!p.contact) {
    next(p, 'trash');
    return;
  }
  if (p.object === null) {
    const dim = contactDealsDimension(accountId, p.contact.id);
    const [listed] = await dealIndex.oldestListed(accountId, dim, { after: p.at, limit: 1 });
    if (!listed) next(p, 'trash');
    else {
      p.at = listed.at;
      if (listed.stored) {
        startObject(p, listed.stored.entity.uuid, 'commit');
        return 'checkpoint';
      }
    }
    return;
  }
  if (p.sub === 'refs') {
    if (await refsStep(accountId, p, count, options)) {
      await markTouched(accountId, record.id, 'deal', p.object);
      endObject(p);
    }
    return;
  }
  return await commitDeal(m, p.object);
}

/** The deal's own commit: its contact's name, address and phone out, and whatever else named the person. */
async function commitDeal(m: Move, uuid: string): Promise<'raced' | undefined> {
  const { accountId, record, p, count } = m;
  const stored = await dealIndex.getByUuid(accountId, uuid);
  if (stored && !stored.entity.contact.erased) {
    const after = redactValue(stored.entity, p.person) as Deal;
    after.contact = {
      id: stored.entity.contact.id,
      uuid: stored.entity.contact.uuid,
      fullName: '',
      email: '',
      erased: true,
    };
    after.contactPhone = null;
    await noteLeftDimensions(dealIndex.index, accountId, record.id, stored.entity, after);
    const landed = await unlessRaced(() =>
      dealIndex.update(accountId, { before: stored.entity, after, version: stored.version }),
    );
    if (!landed) return 'raced';
    count('deals');
  }
  toSub(p, 'refs');
}
