import { splitAddress } from '#lib/email/addresses.ts';

/** A person's address as kept where the address may not be: its keyed hash (lib/data/index/keyed.ts). */
export { addressHash } from '#lib/data/index/keyed.ts';

/**
 * How many of a mail's person references its commit writes (decisions.md, "Erasing a person"): the commit stays
 * well inside DynamoDB's 100 actions whatever its To and Cc lists. The addresses past them (in From, To, Cc order)
 * get theirs right after the commit (putPersonRefs), and again when the mail is processed again.
 */
export const MAX_PERSON_REFS = 10;

/**
 * The addresses of a mail that get a person reference: distinct (lower-cased), in the order given, none of the
 * account's own (with or without a `+token`), none of `skip` (the ticket's requester, whom its postings find).
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
  }
  return out;
}
