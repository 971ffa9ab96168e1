import { findApiKeyById, getApiKey, listApiKeys } from '#lib/data/api-keys/records.ts';
import { revokeApiKey } from '#lib/data/api-keys/revoke.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { retryOnConflict } from '#lib/data/store/errors.ts';
import { NotFound, Unauthenticated } from '#lib/errors.ts';
import { formatTimestamp, nowMicros, type Timestamp } from '#lib/time.ts';
import { API_KEY_PREFIX } from './key-format.ts';
import type { ApiKeyRecord } from './types.ts';

/**
 * Listing, finding and revoking API keys, and what a live key is (decisions.md, "API keys: scopes, expiry,
 * rotation"), for the key routes and the admin command line alike; making them: key-making.ts.
 */

/** What of a key may be shown (key lists, logs): `dpk_` and the next 8 characters. */
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;
export const shownPrefix = (secret: string) => secret.slice(0, SHOWN_PREFIX_LENGTH);

/** A key's id: `key_` and 16 hex digits. Anything else names no key: a 404 that reads nothing. */
const KEY_ID = /^key_[0-9a-f]{16}$/;
export const isKeyId = (id: string) => KEY_ID.test(id);

/** A key as the API lists it (never its secret). */
export function presentKey(record: ApiKeyRecord) {
  return {
    id: record.id,
    name: record.name,
    prefix: record.prefix,
    scopes: record.scopes,
    created_at: record.createdAt,
    expires_at: record.expiresAt,
    last_used_at: record.lastUsedAt,
    revoked_at: record.revokedAt,
  };
}
export type PresentedKey = ReturnType<typeof presentKey>;

/** A live key: neither revoked nor past its expiry at `at`. */
export const isLive = (record: ApiKeyRecord, at: Timestamp) =>
  !record.revokedAt && (record.expiresAt === null || record.expiresAt > at);

/**
 * The key routes' check of the calling key as stored (decisions.md: a revoked key can never make, list or rotate
 * keys): the authorizer's answer is cached for 30 s, so a key revoked, rotated out or expired since is still let
 * through to here, and one read of its record refuses it (401).
 */
export async function requireLiveKey(accountId: string, keyId: string): Promise<void> {
  const record = await getApiKey(accountId, keyId);
  if (!record || !isLive(record, formatTimestamp(nowMicros()))) throw new Unauthenticated();
}

/**
 * A key of the account by its id, what revoke (any key) and rotate (`live`: neither revoked nor expired) name;
 * undefined when there is none (an id not of the key shape reads nothing).
 */
export async function findKey(accountId: string, keyId: string, live = false) {
  const record = isKeyId(keyId) ? await getApiKey(accountId, keyId) : undefined;
  return record && (!live || isLive(record, formatTimestamp(nowMicros()))) ? record : undefined;
}

/** An account's keys, oldest first. */
export async function listKeys(accountId: string): Promise<PresentedKey[]> {
  const records = await listApiKeys(accountId);
  records.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  return records.map(presentKey);
}

/**
 * `DELETE /api/keys/{id}`: revokes a key of the caller's account (another account's id is a 404). Any key may be
 * revoked, the caller's own last keys:manage key included: a leaked key must always be stoppable at once; the
 * account then manages its keys with the admin command line again (docs/api-keys.md).
 */
export async function revokeKey(
  accountId: string,
  keyId: string,
  attach?: (revoked: PresentedKey) => CommitAttachment,
): Promise<PresentedKey> {
  return retryOnConflict(async () => {
    const record = await findKey(accountId, keyId);
    if (!record) throw new NotFound();
    const revokedAt = await revokeApiKey(record, formatTimestamp(nowMicros()), (at) =>
      attach?.(presentKey({ ...record, revokedAt: at })),
    );
    return presentKey({ ...record, revokedAt });
  });
}

/** The admin command line's `keys revoke KEY_ID`: by id alone; undefined when no key has that id. */
export async function revokeKeyById(keyId: string) {
  const record = isKeyId(keyId) ? await findApiKeyById(keyId) : undefined;
  if (!record) return undefined;
  const revokedAt = await revokeApiKey(record, formatTimestamp(nowMicros()));
  return { id: record.id, revoked_at: revokedAt };
}
