import { describe, expect, it } from 'vitest';
import { recordDigest } from '#lib/imports/digest.ts';

/** The digest a source key keeps of a record (issue 42): the record's content, whatever the order of its fields. */
describe('recordDigest', () => {
  it('is the record, whatever the order of its fields; an undefined field is an absent one', () => {
    expect(recordDigest({ a: 1, b: [1, { c: 'x', d: null }] })).toBe(
      recordDigest({ b: [1, { d: null, c: 'x' }], a: 1 }),
    );
    expect(recordDigest({ a: 1 })).not.toBe(recordDigest({ a: 2 }));
    expect(recordDigest({ a: [1, 2] })).not.toBe(recordDigest({ a: [2, 1] }));
    expect(recordDigest({ a: 1, b: undefined })).toBe(recordDigest({ a: 1 }));
    expect(recordDigest({ a: null })).not.toBe(recordDigest({}));
  });
});
