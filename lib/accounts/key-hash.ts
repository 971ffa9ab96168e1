import { createHash, createHmac } from 'node:crypto';
import { hashSecret } from '#lib/keyed-hash.ts';
import { keyFormatOf } from './key-format.ts';

/**
 * The stored hash of a key: keyed under the service's key-hash secret for the current format (lib/keyed-hash.ts
 * says why); SHA-256, as they were made, for legacy keys.
 */
export function hashApiKey(secret: string): string {
  if (keyFormatOf(secret) === 'legacy') return createHash('sha256').update(secret).digest('hex');
  return createHmac('sha256', hashSecret()).update(secret).digest('hex');
}
