import { emailTerms, textWords, usefulTerms } from '#lib/search.ts';
import type { Ticket } from './types.ts';

/**
 * The words a ticket can be found by (decisions.md, "search"): its prefix terms (subject words, the reference,
 * the requester e-mail whole or from its domain), or its bare number, matched exactly. The term rules shared by
 * every searchable entity are in lib/search.ts.
 */
export interface TicketTerms {
  /** Terms matched by prefix; a term that is a prefix of another is left out (it adds nothing). */
  prefixes: string[];
  /** The ticket number without padding, matched exactly. */
  number: string;
}

/** Terms of a ticket: reference and e-mail terms first, then the subject's words. */
export function ticketTerms(input: {
  subject: string;
  reference: string;
  number: number;
  email: string;
}): TicketTerms {
  const fixed = [input.reference.toLowerCase(), ...emailTerms(input.email)];
  const useful = usefulTerms([...fixed, ...textWords(input.subject)]);
  const ordered = [
    ...useful.filter((t) => fixed.some((f) => f.startsWith(t))),
    ...useful.filter((t) => !fixed.some((f) => f.startsWith(t))),
  ];
  return { prefixes: ordered, number: String(input.number) };
}

/** A stored ticket's terms. */
export function termsOfTicket(
  t: Pick<Ticket, 'subject' | 'reference' | 'number'> & { requester: { email: string } },
): TicketTerms {
  return ticketTerms({
    subject: t.subject,
    reference: t.reference,
    number: t.number,
    email: t.requester.email,
  });
}
