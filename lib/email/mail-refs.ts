import { personRefPut, putPersonRefs } from '#lib/data/mail/person-refs.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { addressHash, MAX_PERSON_REFS, personRefAddresses } from '#lib/erasures/address-hash.ts';
import type { Ticket } from '#lib/tickets/types.ts';

/**
 * The person references of a received mail (decisions.md, "Erasing a person"; docs/email.md, "Parties"): one to
 * its ticket for each address it names in From, To and Cc but the ticket's requester (whom the ticket's postings
 * find) and the account's own, so that erasing any of them finds the ticket. The first MAX_PERSON_REFS go in the
 * message's commit; the rest are written right after it, and again when the mail is processed again (a crash
 * between the two), so every address the mail keeps has its reference once the mail is logged.
 */
export interface MailRefs {
  /** The mail names more addresses than its commit holds references for (the requester not yet left out). */
  spills: boolean;
  /** The commit's references to the ticket `t`; `party`: the mail makes the people it names parties of it. */
  inCommit(t: Ticket, party: boolean): CommitAction[];
  /** The references past the commit's, written after it (none for most mail: no store call). */
  afterCommit(t: Ticket, party: boolean): Promise<void>;
}

export function mailRefs(accountId: string, named: string[], own: readonly string[]): MailRefs {
  const hashesOf = (t: Ticket) =>
    personRefAddresses(named, own, [t.requester.email]).map((address) => addressHash(accountId, address));
  return {
    spills: personRefAddresses(named, own).length > MAX_PERSON_REFS,
    inCommit: (t, party) =>
      hashesOf(t)
        .slice(0, MAX_PERSON_REFS)
        .map((hash) => personRefPut(accountId, hash, t.uuid, party)),
    afterCommit: async (t, party) => {
      const rest = hashesOf(t).slice(MAX_PERSON_REFS);
      if (rest.length > 0) await putPersonRefs(accountId, rest, t.uuid, party);
    },
  };
}
