import { createHash } from 'node:crypto';

/**
 * The terms' sample (issue 40: a search word that matches too much is refused from a cheap probe, not after
 * reading its share of the read budget). One prefix term item in TERM_SAMPLE_RATE, chosen by a hash of the
 * entity's number and the term, is also put in the account's one sample partition (`<ENTITY>_TERMS_SAMPLE#<acc>`,
 * the same sort key): it is one of the entity's prefix terms (items.ts), so every path that writes, moves or
 * removes the terms (a create before its commit, an update's diff, the trash, the reindex's build and sweep)
 * does the same with it. The choice is the same wherever an entity's items are built: no state, no read.
 *
 * A search word's sampled keys estimate its matches. The probe (term-reads.ts, sampleRefuses) reads them beside the
 * word's own read and refuses the word at once when they are so many that a word matching fewer than its read's
 * limit gives them with a chance below 1e-16 (sampleRefusal); otherwise the word's own read decides, exactly.
 * A word that matches 100,000 keys (the default budget) gives ~1,560 sampled ones, refused at ~2,050: one Query of
 * ~150 KB where its read took ~14 pages of 1 MB in a row (docs/capacity.md, "Search").
 */
export const TERM_SAMPLE_RATE = 64;

/**
 * Whether an entity's term is sampled: the first 32 bits of SHA-256 of its number and the term, as written (not
 * its keyed form, which differs by account: the same ticket's items are then the same in every run of a test).
 */
export function sampledTerm(number: number, term: string): boolean {
  const digest = createHash('sha256').update(`${number}\u0000${term}`).digest();
  return digest.readUInt32BE(0) % TERM_SAMPLE_RATE === 0;
}

/**
 * The sampled keys that refuse a word whose own reads would refuse it at `limit` keys read in all. Each of the
 * word's keys is sampled apart from the others (its hash), so a word of N keys gives Binomial(N, 1/64) sampled
 * ones, of mean μ = N / 64; past μ + 12√μ + 12 for N = limit, Chernoff's bound (exp(−a² / 2(μ + a/3)), a the
 * distance) is below e^−38 for every μ: a word of fewer keys never reaches it in practice.
 */
export function sampleRefusal(limit: number): number {
  const mean = limit / TERM_SAMPLE_RATE;
  return Math.ceil(mean + 12 * Math.sqrt(mean) + 12);
}
