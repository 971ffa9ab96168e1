import { describe, expect, it } from 'vitest';
import { checksumOf, KEY_REGEX, keyFormatOf, mintKeySecret } from '#lib/accounts/key-format.ts';
import { allows, beyond, decodeGrants, encodeGrants, SCOPES } from '#lib/accounts/scopes.ts';

describe('API key format (decisions.md, "API keys: scopes, expiry, rotation")', () => {
  it('computes the checksum as zlib CRC-32 in 6 base62 digits (values from Python zlib.crc32)', () => {
    // zlib.crc32(b'dpk_' + b'0' * 40) == 316094483 == 0LOIc7 in base62 (0-9, A-Z, a-z)
    expect(checksumOf(`dpk_${'0'.repeat(40)}`)).toBe('0LOIc7');
    expect(checksumOf(`dpk_${'Zz9'.repeat(13)}a`)).toBe('2cyJri');
  });

  it('mints keys that the documented regex finds and whose checksum holds', () => {
    const keys = Array.from({ length: 200 }, mintKeySecret);
    for (const key of keys) {
      expect(key).toMatch(/^dpk_[0-9A-Za-z]{46}$/);
      expect(`token=${key};`.match(KEY_REGEX)?.[0]).toBe(key);
      expect(keyFormatOf(key)).toBe('current');
    }
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('refuses every one-character change of a key offline (its checksum fails)', () => {
    const key = mintKeySecret();
    for (let i = 4; i < key.length; i++) {
      const changed = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
      expect(keyFormatOf(changed), `position ${i}`).toBeUndefined();
    }
    expect(keyFormatOf(key.slice(0, -1))).toBeUndefined();
    expect(keyFormatOf(`${key}a`)).toBeUndefined();
  });

  it('still recognises the shape of keys made before the format (43 base64url characters), for a store read', () => {
    expect(keyFormatOf(`dpk_${'A-_'.repeat(14)}x`)).toBe('legacy');
    expect(keyFormatOf(`dpk_${'A'.repeat(42)}`)).toBeUndefined();
  });
});

describe('scopes', () => {
  it('a :write scope includes its :read, * includes everything, and nothing else is implied', () => {
    expect(allows(['tickets:write'], 'tickets:read')).toBe(true);
    expect(allows(['tickets:read'], 'tickets:write')).toBe(false);
    expect(allows(['deals:write'], 'tickets:read')).toBe(false);
    for (const scope of SCOPES) expect(allows(['*'], scope)).toBe(true);
    for (const scope of SCOPES) expect(allows([], scope)).toBe(false);
    expect(allows(['keys:manage'], 'webhooks:manage')).toBe(false);
  });

  it('finds what a key would mint beyond its own grants', () => {
    expect(beyond(['tickets:write', 'keys:manage'], ['tickets:read', 'tickets:write'])).toEqual([]);
    expect(beyond(['tickets:read', 'keys:manage'], ['tickets:write'])).toEqual(['tickets:write']);
    expect(beyond(['tickets:write', 'deals:write', 'keys:manage'], ['*'])).toEqual(['*']);
    expect(beyond(['*'], ['*', 'erasures:write'])).toEqual([]);
  });

  it('carries grants through the authorizer context and drops anything unknown', () => {
    expect(decodeGrants(encodeGrants(['tickets:read', 'keys:manage']))).toEqual([
      'tickets:read',
      'keys:manage',
    ]);
    expect(decodeGrants('tickets:read admin:all *')).toEqual(['tickets:read', '*']);
    expect(decodeGrants(undefined)).toEqual([]);
  });
});
