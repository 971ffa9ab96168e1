import type { IndexName } from '../store/table.ts';

/** Key builders of API keys (docs/api-keys.md): the authorizer's lookup, an account's records and their guard. */

const LOOKUP_PREFIX = 'API_KEY#';
const RECORD_PREFIX = 'API_KEY#';

export const apiKeyKeys = {
  /**
   * What the authorizer reads: the key's hash (keyed; SHA-256 for a key made before scopes) → account, scopes,
   * expiry, revocation. The secret itself is never stored. Nothing but a key's own revocation, rotation or
   * expiry writes it: last use is written on the record.
   */
  lookup: (hash: string) => ({ pk: `${LOOKUP_PREFIX}${hash}`, sk: 'API_KEY' }),
  /** The hash a lookup item is keyed by (its constant-time check compares it). */
  hashOfLookup: (pk: string) => (pk.startsWith(LOOKUP_PREFIX) ? pk.slice(LOOKUP_PREFIX.length) : ''),
  /** An account's keys: the records, and the guard item. */
  accountPartition: (accountId: string) => `API_KEYS#${accountId}`,
  record: (accountId: string, keyId: string) => ({
    pk: `API_KEYS#${accountId}`,
    sk: `${RECORD_PREFIX}${keyId}`,
  }),
  recordPrefix: RECORD_PREFIX,
  /**
   * The account's key-set version, bumped by every key created or rotated: a create counts the live keys it read,
   * and its transaction holds only if no other create landed since (the 100-key limit, exact under concurrency).
   */
  guard: (accountId: string) => ({ pk: `API_KEYS#${accountId}`, sk: 'API_KEYS' }),
  /** gsi1: a key record found by its id alone (`keys revoke KEY_ID`). */
  byId: (keyId: string) => ({ gsi1pk: `API_KEY_ID#${keyId}`, gsi1sk: 'API_KEY' }),
  byIdIndex: 'gsi1' as IndexName,
};
