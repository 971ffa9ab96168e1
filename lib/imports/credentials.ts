import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * A job's source credentials at rest (decisions.md: used for this job only, never answered, logged or put in an
 * event, deleted when the job ends; issue 42: "KMS deployed; a local key under `npm start`"). Envelope encryption:
 * each seal takes a fresh 256-bit data key from its DataKeys (KMS GenerateDataKey deployed,
 * lib/data/imports/kms-keys.ts; the file key under `npm start`, fileDataKeys below), seals the credentials with it
 * (AES-256-GCM, a fresh nonce, the account and job as associated data), and keeps the data key only wrapped, beside
 * the sealed bytes. The wrapping is bound to the encryption context {account, job}: a blob copied onto another job
 * opens neither its data key nor its credentials. The runner and the jobs API receive a Sealer (./sealers.ts makes
 * the one the environment names); nothing else opens a blob.
 */
export const SECRETS_KEY_VARIABLE = 'IMPORT_SECRETS_KEY';
const VERSION = 'v2';

export interface Sealer {
  /** The credentials sealed for job `jobId` of `accountId`: `v2.<wrapped key>.<nonce>.<tag>.<ciphertext>`. */
  seal(accountId: string, jobId: string, credentials: Record<string, string>): Promise<string>;
  /** The credentials a seal of this job holds; throws when the blob is not one (another job's, altered, another key). */
  open(accountId: string, jobId: string, blob: string): Promise<Record<string, string>>;
}

/** What a data key is bound to: KMS's encryption context, the file key's associated data. */
export type EncryptionContext = { account: string; job: string };

/** Who makes and unwraps the data keys of seals: KMS deployed, the file key locally. */
export interface DataKeys {
  /** A fresh 32-byte data key, and it wrapped (bound to `context`). */
  generate(context: EncryptionContext): Promise<{ plaintext: Uint8Array; wrapped: Uint8Array }>;
  /** The data key `wrapped` holds; throws when it was wrapped under another context or key. */
  unwrap(wrapped: Uint8Array, context: EncryptionContext): Promise<Uint8Array>;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
const unb64 = (text: string) => Buffer.from(text, 'base64url');
const associated = (context: EncryptionContext) => Buffer.from(`${context.account}#${context.job}`);

/** Envelope encryption over `keys`: one data key a seal, used once and dropped; one unwrap an open. */
export function envelopeSealer(keys: DataKeys): Sealer {
  return {
    async seal(accountId, jobId, credentials) {
      const context = { account: accountId, job: jobId };
      const { plaintext, wrapped } = await keys.generate(context);
      try {
        const { nonce, tag, sealed } = gcmSeal(plaintext, associated(context), JSON.stringify(credentials));
        return [VERSION, b64(wrapped), b64(nonce), b64(tag), b64(sealed)].join('.');
      } finally {
        plaintext.fill(0);
      }
    },
    async open(accountId, jobId, blob) {
      const [version, wrapped, nonce, tag, sealed, ...rest] = blob.split('.');
      if (version !== VERSION || !wrapped || !nonce || !tag || sealed === undefined || rest.length > 0)
        throw new Error('not sealed credentials');
      const context = { account: accountId, job: jobId };
      const key = await keys.unwrap(unb64(wrapped), context);
      try {
        const text = gcmOpen(key, associated(context), unb64(nonce), unb64(tag), unb64(sealed));
        return JSON.parse(text) as Record<string, string>;
      } finally {
        key.fill(0);
      }
    },
  };
}

/**
 * The data keys of `npm start` and the tests: wrapped under a key derived from the file key (IMPORT_SECRETS_KEY, 32
 * bytes; `npm start` makes it once in `.local/imports/secrets.key`; HKDF-SHA256, so the upload URLs' HMAC under the
 * same file key never shares a key with this) with AES-256-GCM, the context as associated data, as KMS binds its
 * encryption context: `<nonce 12><tag 16><key 32>`.
 */
export function fileDataKeys(fileKey: Uint8Array): DataKeys {
  if (fileKey.length !== 32) throw new Error(`${SECRETS_KEY_VARIABLE} must be 32 bytes, base64`);
  const wrapping = Buffer.from(hkdfSync('sha256', fileKey, Buffer.alloc(0), 'deskpipe import data keys', 32));
  return {
    async generate(context) {
      const plaintext = randomBytes(32);
      const { nonce, tag, sealed } = gcmSeal(wrapping, associated(context), plaintext);
      return { plaintext, wrapped: Buffer.concat([nonce, tag, sealed]) };
    },
    async unwrap(wrapped, context) {
      const bytes = Buffer.from(wrapped);
      if (bytes.length !== 60) throw new Error('not a wrapped data key');
      return gcmOpenBytes(
        wrapping,
        associated(context),
        bytes.subarray(0, 12),
        bytes.subarray(12, 28),
        bytes.subarray(28),
      );
    },
  };
}

/** The file key IMPORT_SECRETS_KEY names (32 bytes, base64). */
export function secretsKey(): Buffer {
  const value = process.env[SECRETS_KEY_VARIABLE];
  if (!value) throw new Error(`${SECRETS_KEY_VARIABLE} is not set (32 bytes, base64)`);
  return Buffer.from(value, 'base64');
}

/** A new key, base64: what `npm start` writes to `.local/` when there is none. */
export const newSecretsKey = (): string => randomBytes(32).toString('base64');

function gcmSeal(key: Uint8Array, aad: Buffer, text: string | Uint8Array) {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const sealed = Buffer.concat([
    typeof text === 'string' ? cipher.update(text, 'utf8') : cipher.update(text),
    cipher.final(),
  ]);
  return { nonce, tag: cipher.getAuthTag(), sealed };
}

function gcmOpenBytes(key: Uint8Array, aad: Buffer, nonce: Buffer, tag: Buffer, sealed: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 });
  decipher.setAAD(aad);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(sealed), decipher.final()]);
}

const gcmOpen = (key: Uint8Array, aad: Buffer, nonce: Buffer, tag: Buffer, sealed: Buffer) =>
  gcmOpenBytes(key, aad, nonce, tag, sealed).toString('utf8');
