import { contacts } from '#lib/data/contacts/contact-index.ts';
import { eraseContact } from '#lib/data/erasures.ts';
import { getTrashed } from '#lib/data/trash/trash.ts';
import { refsStep } from '../copies.ts';
import { type Move, type MoveEnd, next, startObject, toSub, unlessRaced } from '../move.ts';
import { trashedObjectStep } from '../trashed.ts';

/**
 * Phase `contact`: the person's contact erased (deleted, never to the trash; one deleted while the job ran is
 * purged), then its references.
 */
export async function contact({ accountId, p, options, count }: Move): Promise<MoveEnd | undefined> {
  if (!p.contact) {
    next(p, 'recheck');
    return;
  }
  if (p.object === null) {
    startObject(p, p.contact.uuid, 'commit');
    return 'checkpoint';
  }
  if (p.sub === 'refs') {
    if (await refsStep(accountId, p, count, options)) next(p, 'recheck');
    return;
  }
  if (p.sub === 'trash') {
    // Deleted while the job ran (after the trash phase passed): purged as the trash phase purges.
    const moved = await trashedObjectStep(accountId, p, 'contact', count, options);
    if (moved === 'purged') next(p, 'recheck');
    else if (moved === 'restored') toSub(p, 'commit');
    return;
  }
  const stored = await contacts.getByUuid(accountId, p.contact.uuid);
  if (stored) {
    if (!(await unlessRaced(() => eraseContact(accountId, stored)))) return 'raced';
    count('contact');
  } else if (await getTrashed(accountId, p.contact.uuid)) {
    toSub(p, 'trash');
    return;
  }
  toSub(p, 'refs');
}
