import { contacts } from '../contacts/contact-index.ts';
import { dimensionName } from '../index/dimensions.ts';
import { getItem } from '../store/client.ts';
import { tickets } from '../tickets/ticket-index.ts';
import { messageItems, personRefs } from './refs.ts';

/**
 * The replay's candidates for a ledger entry's person (lib/erasures/replay.ts): the ledger keeps only the
 * address's keyed hash, so the addresses the table names under that hash are found and hashed again by the caller.
 */

/** Postings of an address's dimension read for its address (a failed create's orphan or two may come first). */
const ADDRESS_CANDIDATES = 3;

/**
 * The addresses the account's index lists under an erasure's hash: an address's dimension (the tickets it
 * requested, its contact) is named by that hash (lib/data/index/keyed.ts), so the first entities of its postings
 * give the address back (one Query and a GetItem or a few of the account's partitions per engine, never a Scan):
 * the replay's candidates, each to be hashed again by the caller.
 */
export async function* indexedAddresses(accountId: string, hash: string): AsyncGenerator<string> {
  const dim = dimensionName('email', hash);
  // Keys only, each entity read when its turn comes: the caller stops at the first address that matches.
  const page = { after: null, limit: ADDRESS_CANDIDATES, read: false };
  for (const { at } of await tickets.oldestListed(accountId, dim, page)) {
    const address = (await tickets.getByOrderKey(accountId, at))?.entity.requester.email;
    if (address) yield address;
  }
  for (const { at } of await contacts.oldestListed(accountId, dim, page)) {
    const address = (await contacts.getByOrderKey(accountId, at))?.entity.email;
    if (address) yield address;
  }
}

/**
 * The addresses a person's references lead to (the replay's candidates for a person no index names: their mail
 * on others' tickets): the sender of each inbound entry referred to, and the `from`, `to` and `cc` of each
 * ticket's description mail and messages, a page at a time; the caller stops at the one whose hash matches.
 */
export async function* referencedAddresses(accountId: string, hash: string): AsyncGenerator<string> {
  const mailAddresses = (mail: unknown): string[] => {
    const email = (mail as { email?: Record<string, unknown> } | undefined)?.email;
    if (!email) return [];
    const from = (email.from as { email?: unknown } | undefined)?.email;
    return [from, ...[email.to, email.cc].flatMap((list) => (Array.isArray(list) ? list : []))].filter(
      (a): a is string => typeof a === 'string',
    );
  };
  let after: string | null = null;
  for (;;) {
    const refs = await personRefs(accountId, hash, after, 25);
    for (const ref of refs) {
      const { kind, id } = ref;
      if (kind === 'inbound') {
        const from = (await getItem({ pk: ref.pk, sk: ref.sk }))?.from;
        if (typeof from === 'string') yield from;
        continue;
      }
      const ticket = await tickets.getByUuid(accountId, id);
      yield* mailAddresses(ticket?.entity.descriptionEmail);
      for (let number = 1; ; ) {
        const page = await messageItems(accountId, id, number, 100);
        for (const message of page) yield* mailAddresses(message);
        if (page.length < 100) break;
        number = Number(page.at(-1)?.number ?? number + 100);
      }
    }
    if (refs.length < 25) return;
    after = refs.at(-1)?.ref ?? null;
  }
}
