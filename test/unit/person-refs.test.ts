import { describe, expect, it } from 'vitest';
import { addressHash, MAX_PERSON_REFS, personRefAddresses } from '#lib/erasures/address-hash.ts';

/** Which addresses of a received mail get a person reference (decisions.md, "Erasing a person"). */
describe('personRefAddresses', () => {
  it('takes each address once, lower-cased, but the account’s own (with a token) and the requester', () => {
    expect(
      personRefAddresses(
        [
          'Rita@Customer.test',
          'support+EM-12@desk.test',
          'ann@other.test',
          'RITA@customer.test',
          'bob@x.test',
          '',
        ],
        ['support@desk.test'],
        ['Ann@Other.test'],
      ),
    ).toEqual(['rita@customer.test', 'bob@x.test']);
  });

  it(`takes every address, in the order given (the commit writes the first ${MAX_PERSON_REFS}, the rest after it)`, () => {
    const many = Array.from({ length: 30 }, (_, i) => `p${i}@cc.test`);
    expect(personRefAddresses(many, [])).toEqual(many);
  });

  it('hashes an address with its account, whatever its case: no address in the key', () => {
    const hash = addressHash('acc1', 'Rita@Customer.test');
    expect(hash).toBe(addressHash('acc1', ' rita@customer.test'));
    expect(hash).not.toBe(addressHash('acc2', 'rita@customer.test'));
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
  });
});
