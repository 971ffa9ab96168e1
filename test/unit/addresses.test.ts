import { describe, expect, it } from 'vitest';
import { canonicalAddress, readAddress } from '#lib/email/addresses.ts';

/** The one address reader (docs/email.md, "Addresses"): what it holds, how it compares, what it refuses. */
describe('readAddress', () => {
  it('holds addresses as people have them: as written, an internationalized domain in its ASCII form', () => {
    const held = (input: string) => (readAddress(input) as { address?: string }).address;
    expect(held("O'Brien@Example.TEST")).toBe("O'Brien@Example.TEST");
    expect(held('"john doe"@example.test')).toBe('"john doe"@example.test');
    expect(held('"a@b"@example.test')).toBe('"a@b"@example.test');
    expect(held('"rita"@example.test')).toBe('rita@example.test');
    expect(held('Jürgen@Bücher.Example')).toBe('Jürgen@xn--bcher-kva.example');
    expect(held('rita@xn--tda.example')).toBe('rita@xn--tda.example');
    expect(held(' rita+vip@example.test ')).toBe('rita+vip@example.test');
    expect(held('root@[192.0.2.1]')).toBe('root@[192.0.2.1]');
  });

  it('compares an IDN domain in either form as one address, case-insensitively', () => {
    expect(canonicalAddress('Rita@ü.example')).toBe('rita@xn--tda.example');
    expect(canonicalAddress('RITA@XN--TDA.EXAMPLE')).toBe('rita@xn--tda.example');
    expect(canonicalAddress('"John Doe"@X.example')).toBe('"john doe"@x.example');
  });

  it('holds a quoted local part with only the quoted-pairs it needs: every way of writing it is one address', () => {
    const held = (input: string) => (readAddress(input) as { address?: string }).address;
    expect(held('"john\\ doe"@example.test')).toBe('"john doe"@example.test');
    expect(held('"\\j\\o\\h\\n"@example.test')).toBe('john@example.test');
    expect(held('"a\\@b"@example.test')).toBe('"a@b"@example.test');
    // A quote or a backslash in it needs its pair, and keeps it.
    expect(held('"say \\"hi\\""@example.test')).toBe('"say \\"hi\\""@example.test');
    expect(held('"back\\\\slash"@example.test')).toBe('"back\\\\slash"@example.test');
    expect(canonicalAddress('"John\\ Doe"@X.example')).toBe(canonicalAddress('"john doe"@x.example'));
  });

  it('refuses what is not an address, and one over 254 characters rather than cut it', () => {
    for (const bad of [
      '',
      'rita',
      'rita@',
      '@x.example',
      'a@b@',
      '"open@x.example',
      'a b@x.example',
      'a@-x-.example',
      'a@x..example',
      'a@1.2.3.4',
      'a@localhost',
      'a.@x.example',
    ]) {
      expect(readAddress(bad), bad).toEqual({ problem: 'invalid' });
    }
    const long = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(22)}.example`;
    expect(long.length).toBe(287);
    expect(readAddress(long)).toEqual({ problem: 'too_long' });
    expect(readAddress(`${'a'.repeat(450_000)}@x.example`)).toEqual({ problem: 'too_long' });
    expect(readAddress(`${'a'.repeat(244)}@x.example`)).toEqual({ address: `${'a'.repeat(244)}@x.example` });
    expect(readAddress(`${'a'.repeat(245)}@x.example`)).toEqual({ problem: 'too_long' });
  });
});
