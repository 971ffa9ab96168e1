import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keyedTerm, TERM_KEY_CHARS_PER_CHAR } from '#lib/data/index/keyed.ts';
import { indexKeys, TERM_SHARDS, termShard } from '#lib/data/keys/index/entity.ts';
import { dimension } from '#lib/data/tickets/ticket-index.ts';
import { addressHash } from '#lib/erasures/address-hash.ts';

/**
 * What the index's keys hold of text a person wrote (lib/data/index/keyed.ts): a search term's key answers the
 * prefix search exactly as the term does, with no character of the term in it; a dimension value's key is a
 * fixed-length keyed hash, an address's the erasure's own hash of it.
 */
/**
 * Terms spread over TERM_SHARDS partitions (issue 40: one partition took every create's ~13 terms), by their first
 * two characters, so that a search word still reads one partition: the one every term it can match is in.
 */
describe('term shards', () => {
  const text = fc.string({ unit: 'binary', maxLength: 12 });
  const keys = indexKeys('TICKET');

  it("hold every term a word of two characters or more matches in the word's one partition", () => {
    fc.assert(
      fc.property(text, text, (word, rest) => {
        const keyedWord = keyedTerm('acc', word);
        const partitions = keys.termsPartitionsOfWord('acc', keyedWord);
        const term = keys.prefixTerm('acc', keyedTerm('acc', word + rest), '0#1');
        expect(partitions).toContain(term.pk);
        expect(partitions).toHaveLength(word.length >= 2 ? 1 : TERM_SHARDS);
      }),
      { numRuns: 300 },
    );
  });

  it("spread a create's words over the shards", () => {
    const words = 'invoice 201 missing for march from the billing portal tkt-000201 client.test'.split(' ');
    const shards = new Set(words.map((w) => termShard(keyedTerm('acc', w))));
    expect(shards.size).toBeGreaterThanOrEqual(5);
    expect(keys.prefixTerm('acc', keyedTerm('acc', 'invoice'), '0#1').pk).not.toBe('TICKET_TERMS#acc');
  });
});

describe('keyed terms', () => {
  // Any UTF-16 text, lone surrogates included (a term cut at 64 units can end inside a pair).
  const text = fc.string({ unit: 'binary', maxLength: 12 });

  it('start one another exactly when their terms do, whatever the characters', () => {
    fc.assert(
      fc.property(text, text, (word, term) => {
        const [w, t] = [keyedTerm('acc', word), keyedTerm('acc', term)];
        expect(t.startsWith(w)).toBe(term.startsWith(word));
        expect(w).toHaveLength(word.length * TERM_KEY_CHARS_PER_CHAR);
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(text, text, (word, rest) => {
        expect(keyedTerm('acc', word + rest).startsWith(keyedTerm('acc', word))).toBe(true);
      }),
      { numRuns: 100 },
    );
    // A word with one more character, or one that differs in its last unit only (two lone surrogates).
    const [pair, other] = ['ab\uD83D', 'ab\uD83E'];
    expect(keyedTerm('acc', other).startsWith(keyedTerm('acc', pair))).toBe(false);
    expect(keyedTerm('acc', 'anna').startsWith(keyedTerm('acc', 'annab'))).toBe(false);
  });

  it('hold no separator and differ between accounts', () => {
    const key = keyedTerm('acc', 'plan#gold');
    expect(key).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(key).not.toBe(keyedTerm('other', 'plan#gold'));
  });
});

describe('keyed dimension values', () => {
  it("name an address by the erasure's hash of it, and any value in a fixed length", () => {
    expect(dimension.email('acc', 'Ann.Lee@Example.test')).toBe(
      `email#${addressHash('acc', 'ann.lee@example.test')}`,
    );
    const long = dimension.customField('acc', 'note', 'é'.repeat(1_024));
    expect(long).toMatch(/^cf#[0-9a-f]{64}$/);
    expect(dimension.customField('acc', 'note', 'x')).not.toBe(dimension.customField('acc', 'note', 'x '));
    expect(dimension.customField('acc', 'plan', 'gold')).not.toBe(dimension.customField('b', 'plan', 'gold'));
    // Bounded values stay readable.
    expect(dimension.status('open')).toBe('status#open');
  });
});
