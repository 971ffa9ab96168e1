import { getDeal as readDeal, type StoredDeal } from '#lib/data/deals/deals.ts';
import { NotFound } from '#lib/errors.ts';

export type { StoredDeal };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The `getDeal` route: the deal its uuid names, with its contact as it is now (one round trip: the uuid names
 * both). Unknown, malformed and other accounts' deals are all 404.
 */
export async function getDeal(accountId: string, ref: string): Promise<StoredDeal> {
  const found = await findDeal(accountId, ref);
  if (!found) throw new NotFound();
  return found;
}

export async function findDeal(accountId: string, ref: string): Promise<StoredDeal | undefined> {
  const uuid = ref.trim().toLowerCase();
  return UUID.test(uuid) ? readDeal(accountId, uuid) : undefined;
}
