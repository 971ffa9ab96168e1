import { getAccount } from '#lib/data/accounts/accounts.ts';
import { touchApiKey } from '#lib/data/api-keys/last-use.ts';
import { findApiKeyByHash } from '#lib/data/api-keys/records.ts';
import { Forbidden, Unauthenticated } from '#lib/errors.ts';
import { sameHash } from '#lib/keyed-hash.ts';
import { logError } from '#lib/log.ts';
import { LruMap } from '#lib/lru.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { API_KEY_PREFIX, keyFormatOf } from './key-format.ts';
import { hashApiKey } from './key-hash.ts';
import { shownPrefix } from './key-management.ts';
import { encodeGrants } from './scopes.ts';
import { type Plan, rateLimitOf } from './types.ts';

/** Who is calling: what the authorizer resolves a key to, and passes to every handler as its context. */

export const API_PLANS: readonly Plan[] = ['pro', 'enterprise'];
export const PLAN_REQUIRED_MESSAGE = 'The API is available on the Pro and Enterprise plans only.';

/** `last_used_at` is accurate to a minute: a key's record is written at most this often. */
export const LAST_USED_RESOLUTION_SECONDS = 60;
/** Keys this container wrote last use for, and when (ms): most cache misses then send no write at all. */
const lastTouched = new LruMap<string, number>(10_000);

/** The shown prefix of the key in an Authorization header, for logs; undefined when it holds no API key. */
export function keyPrefixOf(authorization: string | undefined): string | undefined {
  const secret = bearerToken(authorization);
  return secret?.startsWith(API_KEY_PREFIX) ? shownPrefix(secret) : undefined;
}

/** The token of an `Authorization: Bearer <key>` header; the scheme is case-insensitive, the key exact. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^bearer +(\S+)$/i.exec(header?.trim() ?? '');
  return match?.[1];
}

export interface Caller {
  accountId: string;
  plan: Plan;
  keyId: string;
  /** Requests per minute this account may make. */
  rateLimit: number;
  /** The key's grants, space-separated (lib/accounts/scopes.ts): what the authorizer's context carries. */
  scopes: string;
}

/**
 * Resolves an Authorization header to the calling account. Throws Unauthenticated (401) for a missing,
 * malformed, unknown, revoked or expired key, and Forbidden (403) for an account whose plan has no API access.
 * A token that is not a key (its checksum fails) costs no store read. Otherwise: one GetItem for the key, then
 * the account's (with, at most once a minute per key, the last-use write beside it, never waited for).
 */
export async function resolveApiKey(authorization: string | undefined): Promise<Caller> {
  const secret = bearerToken(authorization);
  if (!secret || !keyFormatOf(secret)) throw new Unauthenticated();
  const hash = hashApiKey(secret);
  const lookup = await findApiKeyByHash(hash);
  // The item is found by its hash; the constant-time check is the decision, whatever the lookup matched on.
  if (!lookup || !sameHash(lookup.hash, hash) || lookup.revokedAt) throw new Unauthenticated();
  const nowUs = nowMicros();
  if (lookup.expiresAt !== null && lookup.expiresAt <= formatTimestamp(nowUs)) throw new Unauthenticated();

  const account = getAccount(lookup.accountId);
  recordUse(lookup.accountId, lookup.keyId, nowUs);
  const found = await account;
  if (!found) throw new Unauthenticated();
  if (!API_PLANS.includes(found.plan) || found.suspended) throw new Forbidden(PLAN_REQUIRED_MESSAGE);
  return {
    accountId: found.id,
    plan: found.plan,
    keyId: lookup.keyId,
    rateLimit: rateLimitOf(found),
    scopes: encodeGrants(lookup.scopes),
  };
}

/**
 * Writes a key's last use when this container has not in the last minute: started beside the account read, so
 * it is on its way before the answer, and never waited for (a failure is logged; the next minute writes again).
 */
function recordUse(accountId: string, keyId: string, nowUs: number): void {
  const nowMs = nowUs / 1000;
  const last = lastTouched.get(keyId);
  if (last !== undefined && nowMs - last < LAST_USED_RESOLUTION_SECONDS * 1000) return;
  lastTouched.set(keyId, nowMs);
  const notAfter = formatTimestamp(nowUs - LAST_USED_RESOLUTION_SECONDS * 1_000_000);
  const write: Promise<void> = touchApiKey(accountId, keyId, formatTimestamp(nowUs), notAfter)
    .catch((error: unknown) => {
      lastTouched.delete(keyId);
      logError(error);
    })
    .finally(() => pendingUses.delete(write));
  pendingUses.add(write);
}

const pendingUses = new Set<Promise<void>>();

/** Tests and benches: waits for the last-use writes under way (the authorizer never does). */
export async function settleLastUseWrites(): Promise<void> {
  while (pendingUses.size > 0) await Promise.all([...pendingUses]);
}
