import { randomBytes } from 'node:crypto';
import { commitKeySetChange, readKeySet } from '#lib/data/api-keys/key-set.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { isTransactionConflict, retryOnConflict, StaleVersion } from '#lib/data/store/errors.ts';
import { Forbidden, NotFound, Refused, ValidationFailed } from '#lib/errors.ts';
import { formatTimestamp, nowMicros, type Timestamp } from '#lib/time.ts';
import type { Caller } from './api-keys.ts';
import { mintKeySecret } from './key-format.ts';
import { hashApiKey } from './key-hash.ts';
import { isKeyId, isLive, shownPrefix } from './key-management.ts';
import { beyond, decodeGrants, type Grant, lacksScopeMessage } from './scopes.ts';
import type { ApiKeyRecord } from './types.ts';

/**
 * Making API keys (decisions.md, "API keys: scopes, expiry, rotation"): a new key, for the key routes and the admin
 * command line alike, and a rotation's. Both count the live keys of the key set as read and write only if the set
 * did not change since.
 */

/** Live keys an account may hold at once (live: neither revoked nor past its expiry). */
export const MAX_LIVE_KEYS = 100;

export interface NewKey {
  name: string;
  scopes: Grant[];
  /** Epoch microseconds; undefined: never expires. */
  expiresAt?: number | undefined;
}

/** The calling key of a key route: its account, its id and its grants as the authorizer passed them. */
export type KeyCaller = Pick<Caller, 'accountId' | 'keyId' | 'scopes'>;

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
