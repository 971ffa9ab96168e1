import { createHash, randomBytes } from 'node:crypto';
import { getAccount } from '#lib/data/accounts.ts';
import {
  findApiKeyByHash,
  findApiKeyById,
  listApiKeys,
  putApiKey,
  revokeApiKey,
  touchApiKey,
} from '#lib/data/api-keys.ts';
import { Forbidden, Unauthenticated } from '#lib/errors.ts';
import { formatTimestamp, now, nowMicros } from '#lib/time.ts';
import { type ApiKeyRecord, type Plan, rateLimitOf } from './types.ts';

/** Recognisable in logs and secret scanners; followed by 256 random bits in base64url. */
export const API_KEY_PREFIX = 'dpk_';
const SHOWN_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;
/** last_used_at is a hint for operators, not an audit log: write it at most this often per key. */
const LAST_USED_RESOLUTION_SECONDS = 300;

export const API_PLANS: readonly Plan[] = ['pro', 'enterprise'];
export const PLAN_REQUIRED_MESSAGE = 'The API is available on the Pro and Enterprise plans only.';

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export interface IssuedApiKey {
  id: string;
  api_key: string;
  created_at: string;
}

export async function issueApiKey(accountId: string): Promise<IssuedApiKey> {
  const secret = API_KEY_PREFIX + randomBytes(32).toString('base64url');
  const record: ApiKeyRecord = {
    id: `key_${randomBytes(8).toString('hex')}`,
    accountId,
    hash: hashApiKey(secret),
    prefix: shownPrefix(secret),
    createdAt: now(),
    lastUsedAt: null,
    revokedAt: null,
  };
  await putApiKey(record);
  return { id: record.id, api_key: secret, created_at: record.createdAt };
}

export async function describeApiKeys(accountId: string) {
  const records = await listApiKeys(accountId);
  records.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  return records.map((r) => ({
    id: r.id,
    prefix: r.prefix,
    created_at: r.createdAt,
    last_used_at: r.lastUsedAt ?? null,
    revoked_at: r.revokedAt ?? null,
  }));
}

/** Revokes a key by id; returns undefined when no key has that id. Revoking twice keeps the first time. */
export async function revokeApiKeyById(keyId: string) {
  const record = await findApiKeyById(keyId);
  if (!record) return undefined;
  const revokedAt = await revokeApiKey(record, now());
  return { id: record.id, revoked_at: revokedAt };
}

/** What of a key may be shown (key lists, logs): `dpk_` and the next 8 characters. */
const shownPrefix = (secret: string) => secret.slice(0, SHOWN_PREFIX_LENGTH);

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
}

/**
 * Resolves an Authorization header to the calling account. Throws Unauthenticated (401) for a missing,
 * malformed, unknown or revoked key, and Forbidden (403) for an account whose plan has no API access.
 * Cost: one GetItem for the key, then the account read (and, rarely, the last-used write) in parallel.
 */
export async function resolveApiKey(authorization: string | undefined): Promise<Caller> {
  const secret = bearerToken(authorization);
  if (!secret?.startsWith(API_KEY_PREFIX)) throw new Unauthenticated();
  const hash = hashApiKey(secret);
  const lookup = await findApiKeyByHash(hash);
  if (!lookup || lookup.revokedAt) throw new Unauthenticated();

  const nowUs = nowMicros();
  const staleBefore = formatTimestamp(nowUs - LAST_USED_RESOLUTION_SECONDS * 1_000_000);
  const stale = !lookup.lastUsedAt || lookup.lastUsedAt < staleBefore;
  const [account] = await Promise.all([
    getAccount(lookup.accountId),
    stale ? touchApiKey(lookup, hash, formatTimestamp(nowUs), staleBefore) : undefined,
  ]);
  if (!account) throw new Unauthenticated();
  if (!API_PLANS.includes(account.plan) || account.suspended) throw new Forbidden(PLAN_REQUIRED_MESSAGE);
  return { accountId: account.id, plan: account.plan, keyId: lookup.keyId, rateLimit: rateLimitOf(account) };
}
