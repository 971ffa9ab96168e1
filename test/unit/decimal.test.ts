import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addDecimal, fractionDigits, isZeroDecimal, negateDecimal, percentOf } from '#lib/decimal.ts';

describe('exact decimals', () => {
  it('ten times 0.1 is 1, and 0.3 - 0.1 is 0.2', () => {
    let sum = '0';
    for (let i = 0; i < 10; i++) sum = addDecimal(sum, 0.1);
    expect(sum).toBe('1');
    expect(addDecimal('0.3', negateDecimal('0.1'))).toBe('0.2');
    expect(addDecimal(-0.5, 0.5)).toBe('0');
    expect(addDecimal('-1.25', '0.5')).toBe('-0.75');
  });

  it('weights by a percentage exactly', () => {
    expect(percentOf('1234.56', 35)).toBe('432.096');
    expect(percentOf('0.1', 10)).toBe('0.01');
    expect(percentOf('7', 0)).toBe('0');
    expect(percentOf('-3', 50)).toBe('-1.5');
  });

  it('agree with integer arithmetic on cents, whatever the order of additions', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1e9, max: 1e9 }), { maxLength: 40 }), (cents) => {
        const sum = cents.reduce((acc: string, c) => addDecimal(acc, (c / 100).toFixed(2)), '0');
        const total = cents.reduce((a, b) => a + b, 0);
        // The expected text from integer cents, without the module: whole part, and cents without trailing zeros.
        const abs = Math.abs(total);
        const fraction = String(abs % 100)
          .padStart(2, '0')
          .replace(/0+$/, '');
        const expected = `${total < 0 ? '-' : ''}${Math.floor(abs / 100)}${fraction ? `.${fraction}` : ''}`;
        expect(sum).toBe(expected);
        expect(isZeroDecimal(addDecimal(sum, negateDecimal(sum)))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('counts the digits after the point, also of numbers JavaScript writes with an exponent', () => {
    expect(fractionDigits('12.50')).toBe(2);
    expect(fractionDigits(12.5)).toBe(1);
    expect(fractionDigits(1e-7)).toBe(7);
    expect(fractionDigits(1.5e-7)).toBe(8);
    expect(fractionDigits(1e21)).toBe(0);
    expect(addDecimal(1e21, 1)).toBe('1000000000000000000001');
  });
});
