/**
 * Search terms, shared by every searchable entity (decisions.md, "Search words"): a search word matches when it is a
 * prefix of one of the entity's terms. Terms are the words of a text (whitespace-separated tokens without edge
 * punctuation, and their inner parts) and e-mail addresses (whole, and their domain), lower-cased, at most
 * MAX_TERM_LENGTH characters. A term that is a prefix of another is left out (the longer one answers the same
 * prefix queries). Substrings inside words are not matched.
 */
const EDGE_PUNCTUATION = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu;
const INNER_SEPARATORS = /[^\p{L}\p{N}]+/u;
export const MAX_TERM_LENGTH = 64;

/** Words of a text: whitespace-separated tokens without edge punctuation, and their inner parts. */
export function textWords(text: string): string[] {
  const words = new Set<string>();
  for (const token of text.toLowerCase().split(/\s+/)) {
    const trimmed = token.replace(EDGE_PUNCTUATION, '');
    if (!trimmed) continue;
    words.add(trimmed);
    for (const part of trimmed.split(INNER_SEPARATORS)) if (part) words.add(part);
  }
  return [...words];
}

/** An e-mail address's terms: the address and its domain, lower-cased. */
export function emailTerms(email: string): string[] {
  const lower = email.toLowerCase();
  return [lower, lower.slice(lower.lastIndexOf('@') + 1)];
}

/**
 * The terms worth storing, cut to MAX_TERM_LENGTH: a term that is a prefix of another adds nothing. The first
 * terms keep their place (they are written in the commit first; the rest may spill before it).
 */
export function usefulTerms(terms: string[]): string[] {
  const all = [...new Set(terms.map((t) => t.slice(0, MAX_TERM_LENGTH)))];
  return all.filter((t) => !all.some((other) => other !== t && other.startsWith(t)));
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
