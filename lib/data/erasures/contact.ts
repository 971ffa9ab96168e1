import type { Contact } from '#lib/accounts/types.ts';
import { contacts } from '../contacts/contact-index.ts';
import { releaseEmail } from '../contacts/contacts.ts';
import { writePlan } from '../index/write-plan.ts';
import type { Versioned } from '../store/items.ts';

/**
 * A contact erased: deleted as a deletion deletes it (out of every list, count and search, its e-mail item
 * released), guarded by the version read, but never to the trash: nothing of it is kept to restore.
 */
export async function eraseContact(accountId: string, stored: Versioned<Contact>): Promise<void> {
  const none = { title: '', deletedMicros: 0, purgeMicros: 0, deletedAt: '', purgeAt: '' };
  const plan = contacts.planDelete(accountId, stored, none, {
    attach: [releaseEmail(accountId, stored.entity)],
  });
  await writePlan({ ...plan, fixed: plan.fixed.filter((action) => action.what !== 'trash') });
}
