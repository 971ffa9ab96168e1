import { randomBytes } from 'node:crypto';
import { commitKeySetChange, readKeySet } from '#lib/data/api-keys/key-set.ts';
import { findApiKeyById, getApiKey, listApiKeys } from '#lib/data/api-keys/records.ts';
import { revokeApiKey } from '#lib/data/api-keys/revoke.ts';
import { isTransactionConflict, retryOnConflict, StaleVersion } from '#lib/data/errors.ts';
import type { CommitAttachment } from '#lib/data/idempotency.ts';
import { Forbidden, NotFound, Refused, Unauthenticated, ValidationFailed } from '#lib/errors.ts';
import { formatTimestamp, nowMicros, type Timestamp } from '#lib/time.ts';
import type { Caller } from './api-keys.ts';
import { API_KEY_PREFIX, mintKeySecret } from './key-format.ts';
import { hashApiKey } from './key-hash.ts';
import { beyond, decodeGrants, type Grant, lacksScopeMessage } from './scopes.ts';
import type { ApiKeyRecord } from './types.ts';

/**
 * Making, listing, revoking and rotating API keys (decisions.md, "API keys: scopes, expiry, rotation"), for the
 * key routes and the admin command line alike.
 */

/** Live keys an account may hold at once (live: neither revoked nor past its expiry). */
export const MAX_LIVE_KEYS = 100;
/** What of a key may be shown (key lists, logs): `dpk_` and the next 8 characters. */
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;
export const shownPrefix = (secret: string) => secret.slice(0, SHOWN_PREFIX_LENGTH);

export interface NewKey {
  name: string;
  scopes: Grant[];
  /** Epoch microseconds; undefined: never expires. */
  expiresAt?: number | undefined;
}

/** The calling key of a key route: its account, its id and its grants as the authorizer passed them. */
export type KeyCaller = Pick<Caller, 'accountId' | 'keyId' | 'scopes'>;

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

/** A key just made: the only time its secret is shown. */
function presentCreated(record: ApiKeyRecord, secret: string) {
  return {
    id: record.id,
    api_key: secret,
    name: record.name,
    scopes: record.scopes,
    created_at: record.createdAt,
    expires_at: record.expiresAt,
  };
}
export type CreatedKey = ReturnType<typeof presentCreated>;

/**
 * A created key as an Idempotency-Key keeps it, in the key's own transaction: all but the secret, which is
 * stored nowhere (a replay shows `api_key: null`; the key works, and can be rotated for a new secret).
 */
export type KeptKey = Omit<CreatedKey, 'api_key'> & { api_key: string | null };
type AttachKey = (kept: KeptKey) => CommitAttachment;
const withoutSecret = (key: CreatedKey): KeptKey => ({ ...key, api_key: null });

/** A key-set write that lost to another (its version moved on, or DynamoDB cancelled it in a conflict): decide again. */
const lostARace = (error: unknown) => error instanceof StaleVersion || isTransactionConflict(error);

const isLive = (record: ApiKeyRecord, at: Timestamp) =>
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
 * A key with an expiry makes only keys that expire no later (a 422 on `expires_at`), so no key outlives the key
 * that made it. `makerId`: the calling key, whose record is among the key set read (none: the operator's command
 * line).
 */
function refuseOutliving(
  keys: readonly ApiKeyRecord[],
  makerId: string | undefined,
  expiresAt: Timestamp | null,
  rotation: boolean,
): void {
  const limit = keys.find((k) => k.id === makerId)?.expiresAt;
  if (!limit || (expiresAt !== null && expiresAt <= limit)) return;
  const when = expiresAt === null ? 'never' : `at ${expiresAt}`;
  throw ValidationFailed.field(
    'expires_at',
    rotation
      ? `The new key would expire ${when}, after the key rotating it (${limit}): rotate it with a key that expires no sooner.`
      : `The expires at field must be a time no later than ${limit}, when the key making this one expires.`,
  );
}

const tooManyKeys = () =>
  ValidationFailed.field(
    'scopes',
    `An account may have at most ${MAX_LIVE_KEYS} live keys; revoke one before creating another.`,
  );

function mint(
  accountId: string,
  key: { name: string; scopes: Grant[]; expiresAt: Timestamp | null },
): { record: ApiKeyRecord; secret: string } {
  const secret = mintKeySecret();
  return {
    secret,
    record: {
      id: `key_${randomBytes(8).toString('hex')}`,
      accountId,
      hash: hashApiKey(secret),
      prefix: shownPrefix(secret),
      name: key.name,
      scopes: key.scopes,
      createdAt: formatTimestamp(nowMicros()),
      expiresAt: key.expiresAt,
      lastUsedAt: null,
      revokedAt: null,
    },
  };
}

/**
 * A new key for an account, within its limit of live keys: the live keys are counted from the key set as read,
 * and the write holds only if the set did not change since (else read and decide again). 3 round trips.
 * `makerId`: the calling key of `POST /api/keys`, whose expiry bounds the new key's (read with the key set).
 */
export async function createKey(
  accountId: string,
  key: NewKey,
  attach?: AttachKey,
  makerId?: string,
): Promise<CreatedKey> {
  const expiresAt = key.expiresAt === undefined ? null : formatTimestamp(key.expiresAt);
  return retryOnConflict(
    async () => {
      const { version, keys } = await readKeySet(accountId);
      refuseOutliving(keys, makerId, expiresAt, false);
      const { record, secret } = mint(accountId, { name: key.name, scopes: key.scopes, expiresAt });
      if (keys.filter((k) => isLive(k, record.createdAt)).length >= MAX_LIVE_KEYS) throw tooManyKeys();
      const created = presentCreated(record, secret);
      await commitKeySetChange({ version, created: record }, attach?.(withoutSecret(created)));
      return created;
    },
    { retryable: lostARace },
  );
}

/** The grants a caller holds must cover every grant it asks for (a `:write` counts as its `:read`): else 403. */
function refuseEscalation(holder: readonly string[], requested: readonly Grant[]): void {
  const missing = beyond(holder, requested)[0];
  if (missing) throw new Forbidden(lacksScopeMessage(missing));
}

/** `POST /api/keys`: a key with scopes its creator holds, expiring no later than it. */
export function createKeyAs(caller: KeyCaller, key: NewKey, attach?: AttachKey): Promise<CreatedKey> {
  refuseEscalation(decodeGrants(caller.scopes), key.scopes);
  return createKey(caller.accountId, key, attach, caller.keyId);
}

/**
 * `POST /api/keys/{id}/rotate`: a new key with the old one's name and scopes, expiring when the old one would
 * have (never, for a key that never expires), while the old one keeps working for `overlapSeconds` more (never
 * past its own expiry), in one transaction that names the new key on the old one's record: a key rotates once (a
 * second rotation is a 409; the same Idempotency-Key answers the first's 201 before reaching here). A revoked or
 * expired key cannot be rotated: 404, as an unknown one.
 */
export async function rotateKey(
  caller: KeyCaller,
  keyId: string,
  overlapSeconds: number,
  attach?: AttachKey,
): Promise<CreatedKey> {
  if (!isKeyId(keyId)) throw new NotFound();
  const { accountId } = caller;
  return retryOnConflict(
    async () => {
      const { version, keys } = await readKeySet(accountId);
      const old = keys.find((k) => k.id === keyId);
      const at = formatTimestamp(nowMicros());
      if (!old || !isLive(old, at)) throw new NotFound();
      refuseEscalation(decodeGrants(caller.scopes), old.scopes);
      refuseOutliving(keys, caller.keyId, old.expiresAt, true);
      if (old.rotatedTo) {
        throw new Refused(`This key has already been rotated (to ${old.rotatedTo}): rotate that one.`);
      }
      const { record, secret } = mint(accountId, {
        name: old.name ?? 'rotated key',
        scopes: old.scopes,
        expiresAt: old.expiresAt,
      });
      const endOfOverlap = formatTimestamp(nowMicros() + overlapSeconds * 1_000_000);
      const oldEnds = old.expiresAt !== null && old.expiresAt < endOfOverlap ? old.expiresAt : endOfOverlap;
      // During the overlap both keys are live: the old one counts, unless the overlap is nothing.
      const live = keys.filter((k) => isLive(k, at) && (overlapSeconds > 0 || k.id !== old.id));
      if (live.length >= MAX_LIVE_KEYS) throw tooManyKeys();
      const created = presentCreated(record, secret);
      await commitKeySetChange(
        { version, created: record, expire: { record: old, at: oldEnds } },
        attach?.(withoutSecret(created)),
      );
      return created;
    },
    { retryable: lostARace },
  );
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
