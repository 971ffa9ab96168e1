import { type ErasureProgress, trashPage } from '#lib/data/erasures.ts';
import type { TrashType } from '#lib/data/trash/trash.ts';
import { type Move, next, stepSize } from '../move.ts';
import { trashedObjectStep } from '../trashed.ts';

const TRASH_TYPES = ['ticket', 'deal', 'contact'] as const;

/**
 * Phase `trash`: what the person had in the trash (the account's trash: at most 30 days of deletions) is purged
 * now, a type at a time (`sub`), a page of the account's trash a move; each match held, its copies erased and
 * purged (trashedObjectStep).
 */
export async function trash({ accountId, p, options, count }: Move): Promise<undefined> {
  const type = (p.sub ?? TRASH_TYPES[0]) as TrashType;
  if (p.object !== null) {
    const moved = await trashedObjectStep(accountId, p, type, count, options);
    if (moved === 'purged') {
      p.object = null;
      p.subAt = null;
    } else if (moved === 'restored') {
      // Restored before the hold: live again, with all it held. The job goes back to its start, which finds
      // it as it finds any live object of the person (bounded: see 'leftovers').
      next(p, 'find');
    }
    return;
  }
  const page = await trashPage(accountId, type, p.at, stepSize(options));
  const match = page.find((t) => holds(t.object, p));
  if (match) {
    p.object = match.uuid;
    p.subAt = null;
    p.at = match.sortKey;
    return;
  }
  if (page.length === stepSize(options)) p.at = page.at(-1)?.sortKey ?? null;
  else {
    const following = TRASH_TYPES[TRASH_TYPES.indexOf(type as (typeof TRASH_TYPES)[number]) + 1];
    if (following) {
      p.sub = following;
      p.at = null;
    } else next(p, 'contact');
  }
}

/**
 * Whether a trashed object holds the person: their ticket, their contact, a deal of their contact (by its id, or
 * by the e-mail the deal keeps of it: a contact in the trash too is found by no live contact's id).
 */
function holds(object: unknown, p: ErasureProgress): boolean {
  const o = (object ?? {}) as {
    requester?: { email?: string };
    email?: string;
    contact?: { id?: number; email?: string };
  };
  return (
    o.requester?.email?.toLowerCase() === p.person.email ||
    o.email?.toLowerCase() === p.person.email ||
    o.contact?.email?.toLowerCase() === p.person.email ||
    (p.contact !== null && o.contact?.id === p.contact.id)
  );
}
