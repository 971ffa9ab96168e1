import type { Ticket } from './types.ts';

/**
 * The words a ticket can be found by, and how a search term is split (decisions.md, "search").
 * A search word matches a ticket when it is a prefix of one of the ticket's prefix terms (subject words,
 * the reference, the requester e-mail whole or from its domain), or equals its bare number.
 * Substrings inside words are not matched.
 */
const EDGE_PUNCTUATION = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu;
const INNER_SEPARATORS = /[^\p{L}\p{N}]+/u;
export const MAX_TERM_LENGTH = 64;

/** Words of a subject: whitespace-separated tokens without edge punctuation, and their inner parts. */
export function subjectWords(subject: string): string[] {
  const words = new Set<string>();
  for (const token of subject.toLowerCase().split(/\s+/)) {
    const trimmed = token.replace(EDGE_PUNCTUATION, '');
    if (!trimmed) continue;
    words.add(trimmed);
    for (const part of trimmed.split(INNER_SEPARATORS)) if (part) words.add(part);
  }
  return [...words];
}

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
  const email = input.email.toLowerCase();
  const domain = email.slice(email.lastIndexOf('@') + 1);
  const fixed = [input.reference.toLowerCase(), email, domain];
  const words = subjectWords(input.subject);
  const all = [...new Set([...fixed, ...words].map((t) => t.slice(0, MAX_TERM_LENGTH)))];
  const useful = all.filter((t) => !all.some((other) => other !== t && other.startsWith(t)));
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

/** Words of a search: whitespace-separated, lower-cased (cut to the indexed term length). */
export function searchWords(search: string): string[] {
  return [
    ...new Set(
      search
        .toLowerCase()
        .split(/\s+/)
        .filter(Boolean)
        .map((w) => w.slice(0, MAX_TERM_LENGTH)),
    ),
  ];
}
