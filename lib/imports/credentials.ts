import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * A job's source credentials at rest (decisions.md: used for this job only, never answered, logged or put in an
 * event, deleted when the job ends): AES-256-GCM (node:crypto) under IMPORT_SECRETS_KEY (32 bytes, base64), a fresh
 * 12-byte nonce each seal, the job's account and id as associated data, so a sealed blob copied onto another job
 * does not open. `npm start` makes the key in `.local/` if absent (infra/local/environment.ts); deployed, the key is
 * the stack's (KMS envelope encryption is a later slice: docs/imports.md).
 */
export const SECRETS_KEY_VARIABLE = 'IMPORT_SECRETS_KEY';
const VERSION = 'v1';

function secretsKey(): Buffer {
  const value = process.env[SECRETS_KEY_VARIABLE];
  if (!value) throw new Error(`${SECRETS_KEY_VARIABLE} is not set (32 bytes, base64)`);
  const key = Buffer.from(value, 'base64');
  if (key.length !== 32) throw new Error(`${SECRETS_KEY_VARIABLE} must be 32 bytes, base64`);
  return key;
}

/** A new key, base64: what `npm start` writes to `.local/` when there is none. */
export const newSecretsKey = (): string => randomBytes(32).toString('base64');

/** The credentials sealed for job `jobId` of `accountId`: `v1.<nonce>.<tag>.<ciphertext>`, base64url each. */
export function sealCredentials(
  accountId: string,
  jobId: string,
  credentials: Record<string, string>,
): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', secretsKey(), nonce);
  cipher.setAAD(Buffer.from(`${accountId}#${jobId}`));
  const sealed = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
  return [VERSION, nonce, cipher.getAuthTag(), sealed]
    .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
    .join('.');
}

/** The credentials a seal of this job holds; throws when the blob is not one (another job's, altered, another key). */
export function openCredentials(accountId: string, jobId: string, blob: string): Record<string, string> {
  const [version, nonce, tag, sealed] = blob.split('.');
  if (version !== VERSION || !nonce || !tag || sealed === undefined)
    throw new Error('not sealed credentials');
  const decipher = createDecipheriv('aes-256-gcm', secretsKey(), Buffer.from(nonce, 'base64url'));
  decipher.setAAD(Buffer.from(`${accountId}#${jobId}`));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  const text = Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]);
  return JSON.parse(text.toString('utf8')) as Record<string, string>;
}
