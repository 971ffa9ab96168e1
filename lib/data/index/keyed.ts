import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { keyedHash } from '#lib/keyed-hash.ts';

/**
 * What the index's keys hold of text a person wrote (docs/data-model.md, "Keyed values in keys"): never the text.
 * A free-text dimension value (a custom field's, an address) and a search term are named by the account's keyed
 * hash, HMAC-SHA256 under the service's key-hash secret bound to the account id (as suppressions and erasures
 * name an address: addressHash below), so a key never outlives, nor shows to a copy of the table, what
 * an erasure took out of the items; a lookup names the hash of what it looks for, exactly. CPU only: no read.
 */

/**
 * A dimension value in keys: 64 hex characters, whatever the value's length (so no key nears DynamoDB's 2 KB).
 * An address (lower-cased) gives its erasure hash (addressHash): an address's dimension is named by the hash
 * the erasure record and its ledger keep.
 */
export const keyedValue = (accountId: string, value: string): string => keyedHash(`${accountId}:${value}`);

/**
 * A person's address as the service keeps it where the address itself may not be (the `Erasure` record, the
 * ledger, the person references' partition, a suppression: docs/data-model.md, "Erasures"): the keyed value of
 * the address, trimmed and lower-cased. The erasure job computes it again from the address it is given.
 */
export const addressHash = (accountId: string, email: string): string =>
  keyedValue(accountId, email.trim().toLowerCase());

/** Characters of a term's key per UTF-16 unit of the term: 66 bits of its prefix's keyed hash (base64url). */
export const TERM_KEY_CHARS_PER_CHAR = 11;

/** Accounts whose term key a container keeps (32 bytes each). */
const TERM_KEYS_KEPT = 1_000;
const termKeys = new Map<string, KeyObject>();

/**
 * The account's key for its terms: HMAC of `index-terms:<account>` under the secret (a text no other keyed hash
 * of the service is taken of: none starts so), derived once per container, so that a term's characters cost one
 * HMAC each under a 32-byte key rather than under the secret. A KeyObject: an HMAC under a Buffer key took about
 * ten times as long (measured: 40 µs against 4 µs a prefix).
 */
function termKeyOf(accountId: string): KeyObject {
  let key = termKeys.get(accountId);
  if (!key) {
    key = createSecretKey(Buffer.from(keyedHash(`index-terms:${accountId}`), 'hex'));
    termKeys.set(accountId, key);
    if (termKeys.size > TERM_KEYS_KEPT) termKeys.delete(termKeys.keys().next().value as string);
  }
  return key;
}

/**
 * A search term in keys, such that a word's key is a prefix of a term's key exactly when the word is a prefix of
 * the term (a search word matches the terms it starts, decisions.md, "Search words"): for each of the term's UTF-16
 * units, TERM_KEY_CHARS_PER_CHAR characters of the HMAC of the term up to it (its UTF-16 bytes: a lone surrogate,
 * a term cut inside a pair, stays apart from any other), under the account's term key. Two different prefixes
 * give the same characters with odds of 2^-66 (a word matching one term it is no prefix of, in an account of
 * 10 million terms: about 10^-13). The keys hide the words, not the shape of the account's vocabulary (how many
 * terms share a prefix).
 */
export function keyedTerm(accountId: string, term: string): string {
  const key = termKeyOf(accountId);
  const units = Buffer.from(term, 'utf16le');
  let out = '';
  for (let end = 2; end <= units.length; end += 2) {
    const digest = createHmac('sha256', key).update(units.subarray(0, end)).digest('base64url');
    out += digest.slice(0, TERM_KEY_CHARS_PER_CHAR);
  }
  return out;
}
