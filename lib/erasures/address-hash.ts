import { splitAddress } from '#lib/email/addresses.ts';

/** A person's address as kept where the address may not be: its keyed hash (lib/data/index/keyed.ts). */
export { addressHash } from '#lib/data/index/keyed.ts';

/**
 * At most this many addresses of one mail get a person reference (decisions.md, "Erasing a person"): a mail's
 * commit stays well inside DynamoDB's 100 actions whatever its Cc list. Addresses past it (in From, To, Cc order)
 * get none: an erasure of such a person does not find that mail by it.
 */
export const MAX_PERSON_REFS = 10;

/**
 * The addresses of a mail that get a person reference: distinct (lower-cased), in the order given, none of the
 * account's own (with or without a `+token`), none of `skip` (the ticket's requester, whom its postings find),
 * at most MAX_PERSON_REFS.
 */
export function personRefAddresses(
  addresses: (string | null | undefined)[],
  own: readonly string[],
  skip: (string | null | undefined)[] = [],
): string[] {
  const mine = new Set(own.map((a) => a.toLowerCase()));
  const left = new Set(skip.filter((a): a is string => !!a).map((a) => a.trim().toLowerCase()));
  const out: string[] = [];
  for (const raw of addresses) {
    const address = raw?.trim().toLowerCase();
    if (!address?.includes('@') || left.has(address) || mine.has(splitAddress(address).base)) continue;
    left.add(address);
    out.push(address);
    if (out.length === MAX_PERSON_REFS) break;
  }
  return out;
}
