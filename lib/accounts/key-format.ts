import { randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * The API key format (decisions.md, "API keys: scopes, expiry, rotation"): `dpk_`, 40 random base62 characters
 * (about 238 bits), then a 6-character base62 checksum: the CRC-32 (IEEE, as zlib computes it) of everything
 * before it. A secret scanner recognises a key offline with KEY_REGEX and the checksum, and so does the
 * authorizer: a token whose checksum fails is refused before any store read.
 */
export const API_KEY_PREFIX = 'dpk_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 40;
const CHECKSUM_LENGTH = 6;

/** For secret scanners (docs/api-keys.md): the whole key, 50 characters. */
export const KEY_REGEX = /\bdpk_[0-9A-Za-z]{46}\b/;
const CURRENT = /^dpk_[0-9A-Za-z]{46}$/;
/** Keys made before this format: `dpk_` and 32 random bytes in base64url (43 characters), no checksum. */
const LEGACY = /^dpk_[A-Za-z0-9_-]{43}$/;

/** The checksum of a key's body (`dpk_` and its random part): CRC-32 in 6 base62 digits, most significant first. */
export function checksumOf(body: string): string {
  let n = crc32(body);
  let digits = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    digits = BASE62[n % 62] + digits;
    n = Math.floor(n / 62);
  }
  return digits;
}

export function mintKeySecret(): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(62)];
  const body = API_KEY_PREFIX + random;
  return body + checksumOf(body);
}

/**
 * What a bearer token is: a key of the current format whose checksum holds, a legacy key (only a store read
 * can tell whether it is real), or nothing worth a store read.
 */
export function keyFormatOf(token: string): 'current' | 'legacy' | undefined {
  if (CURRENT.test(token)) {
    const split = token.length - CHECKSUM_LENGTH;
    return checksumOf(token.slice(0, split)) === token.slice(split) ? 'current' : undefined;
  }
  return LEGACY.test(token) ? 'legacy' : undefined;
}
