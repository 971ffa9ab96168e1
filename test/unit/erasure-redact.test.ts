import { describe, expect, it } from 'vitest';
import { type Person, personPattern, redactText, redactValue, withIdentity } from '#lib/erasures/redact.ts';

/**
 * The erasure's pattern of a person (lib/erasures/redact.ts): what it finds however the text writes it, and what
 * it leaves (docs/decisions.md, "Erasing a person").
 */
const person: Person = withIdentity(
  { email: 'mary-jane@customer.test', names: [], phones: [] },
  'Mary-Jane Zoë Okafor',
  '+44 20 7946 0991',
);
const pattern = personPattern(person);
const redact = (text: string) => redactText(text, pattern);

describe('the pattern of a person', () => {
  it('finds a hyphenated name by its parts, a name in another Unicode form, and the address URL-encoded', () => {
    expect(redact('Ask Mary about it')).toBe('Ask [erased] about it');
    expect(redact('Jane called')).toBe('[erased] called');
    // Zoë with a combining diaeresis (NFD) is the same name.
    expect(redact('Thanks, Zoe\u0308!')).toBe('Thanks, [erased]!');
    expect(redact('https://x.test/?to=mary-jane%40customer.test')).toBe('https://x.test/?to=[erased]');
  });

  it('finds the phone written another way, national or international, by its last eight digits', () => {
    expect(redact('call +44 20 7946 0991')).toBe('call [erased]');
    expect(redact('call 020-7946-0991 now')).toBe('call 020-[erased] now');
    expect(redact('call (020) 79460991')).toBe('call (020) [erased]');
    expect(redact('tel:+442079460991')).toBe('tel:+4420[erased]');
  });

  it('leaves words that only contain a name part, other numbers, and texts without the person as they are', () => {
    expect(redact('Maryland and Janet')).toBe('Maryland and Janet');
    expect(redact('order 79460991234')).toBe('order 79460991234');
    const decomposed = 'Cafe\u0301 menu';
    expect(redact(decomposed)).toBe(decomposed);
  });

  it("erases a custom field's number that is the phone's digits, stored and shown; other numbers stay", () => {
    const fields = { callback: 442079460991, seats: 12, order: 79460991234, note: 'Mary calls' };
    const erased = { callback: '[erased]', seats: 12, order: 79460991234, note: '[erased] calls' };
    expect(redactValue({ customFields: fields, number: 442079460991 }, person)).toEqual({
      customFields: erased,
      number: 442079460991,
    });
    expect(redactValue({ custom_fields: fields }, person)).toEqual({ custom_fields: erased });
  });
});
