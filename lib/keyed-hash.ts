import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * How a key is kept: only a keyed hash of it, HMAC-SHA256 under the service's key-hash secret, so a copy of the
 * table (a backup, an export) is no list of hashes to try guesses against offline without that secret too.
 *
 * The secret: API_KEY_HASH_SECRET. Deployed, the stack generates it in Secrets Manager and hands it to the
 * functions that hash keys (the authorizer and the key routes) as that variable, resolved at deploy time; the
 * admin command line with --aws needs it exported (docs/api-keys.md). Locally (never in a Lambda runtime),
 * unset means a fixed development value: the local table's keys are worth nothing elsewhere. Changing the
 * secret invalidates every key made under it.
 */
export const HASH_SECRET_VARIABLE = 'API_KEY_HASH_SECRET';
const LOCAL_HASH_SECRET = 'deskpipe-local-development-only-api-key-hash-secret';

export function hashSecret(): string {
  const value = process.env[HASH_SECRET_VARIABLE];
  if (value) return value;
  if (process.env.AWS_LAMBDA_FUNCTION_NAME) {
    throw new Error(`${HASH_SECRET_VARIABLE} is required in a deployed function (the stack sets it)`);
  }
  return LOCAL_HASH_SECRET;
}

/** Whether two hashes are the same, in time that does not depend on where they differ. */
export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * A keyed hash (HMAC-SHA256 under the same secret) of any text kept only as a hash: an erased person's address, an
 * index's keyed values and terms, a reply token, an Idempotency-Key. Shared by every layer, so it lives beside the
 * clock rather than in a domain.
 */
export function keyedHash(text: string): string {
  return createHmac('sha256', hashSecret()).update(text).digest('hex');
}
