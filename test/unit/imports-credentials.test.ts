import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { type KmsApi, kmsDataKeys } from '#lib/data/imports/kms-keys.ts';
import { type EncryptionContext, envelopeSealer, fileDataKeys } from '#lib/imports/credentials.ts';

/**
 * Import credentials sealed at rest (lib/imports/credentials.ts): envelope encryption, a data key a seal, wrapped
 * bound to the job's {account, job}. The envelope is tested over the file key (`npm start`'s) and over KMS's two
 * calls (lib/data/imports/kms-keys.ts) answered by a stand-in that binds the context as KMS does: no real KMS here.
 */
const secret = { subdomain: 'acme', email: 'admin@acme.test', api_token: 'zd-token-4471' };
const KEY_ARN = 'arn:aws:kms:eu-west-1:111122223333:key/imports';

/** KMS as the sealer uses it: data keys wrapped under a key of its own, refused under another context or key id. */
function standInKms(keyId = KEY_ARN) {
  const inner = fileDataKeys(randomBytes(32));
  const calls: { call: 'GenerateDataKey' | 'Decrypt'; input: Record<string, unknown> }[] = [];
  const given: Uint8Array[] = [];
  const tagged = (wrapped: Uint8Array) => Buffer.concat([Buffer.from(`${keyId}\n`), wrapped]);
  const kms: KmsApi = {
    async generateDataKey(input) {
      calls.push({ call: 'GenerateDataKey', input });
      if (input.KeyId !== keyId) throw new Error('NotFoundException');
      const { plaintext, wrapped } = await inner.generate(input.EncryptionContext as EncryptionContext);
      given.push(plaintext);
      return { Plaintext: plaintext, CiphertextBlob: tagged(wrapped) };
    },
    async decrypt(input) {
      calls.push({ call: 'Decrypt', input });
      const blob = Buffer.from(input.CiphertextBlob);
      const prefix = Buffer.from(`${input.KeyId}\n`);
      if (!blob.subarray(0, prefix.length).equals(prefix)) throw new Error('IncorrectKeyException');
      const context = input.EncryptionContext as EncryptionContext;
      try {
        return { Plaintext: await inner.unwrap(blob.subarray(prefix.length), context) };
      } catch {
        throw new Error('InvalidCiphertextException');
      }
    },
  };
  return { kms, calls, given };
}

const flip = (text: string) => `${text[0] === 'A' ? 'B' : 'A'}${text.slice(1)}`;
const withPart = (blob: string, index: number, change: (part: string) => string) =>
  blob
    .split('.')
    .map((part, i) => (i === index ? change(part) : part))
    .join('.');

describe('import credentials under the file key', () => {
  const sealer = envelopeSealer(fileDataKeys(randomBytes(32)));

  it('open as sealed, and the blob holds none of them in the clear; each seal has its own data key', async () => {
    const blob = await sealer.seal('acc1', 'imp_1', secret);
    expect(await sealer.open('acc1', 'imp_1', blob)).toEqual(secret);
    for (const value of Object.values(secret)) expect(blob).not.toContain(value);
    const again = await sealer.seal('acc1', 'imp_1', secret);
    expect(again.split('.')[0]).toBe('v2');
    expect(again.split('.')[1]).not.toBe(blob.split('.')[1]);
  });

  it('do not open for another job or account, altered (the sealed bytes or the wrapped key), or under another key', async () => {
    const blob = await sealer.seal('acc1', 'imp_1', secret);
    await expect(sealer.open('acc1', 'imp_2', blob)).rejects.toThrow();
    await expect(sealer.open('acc2', 'imp_1', blob)).rejects.toThrow();
    await expect(sealer.open('acc1', 'imp_1', withPart(blob, 4, flip))).rejects.toThrow();
    await expect(sealer.open('acc1', 'imp_1', withPart(blob, 1, flip))).rejects.toThrow();
    await expect(sealer.open('acc1', 'imp_1', 'not a blob')).rejects.toThrow();
    const other = envelopeSealer(fileDataKeys(randomBytes(32)));
    await expect(other.open('acc1', 'imp_1', blob)).rejects.toThrow();
  });

  it('refuse a file key that is not 32 bytes', () => {
    expect(() => fileDataKeys(Buffer.alloc(16))).toThrow(/32 bytes/);
  });
});

describe('import credentials under KMS', () => {
  it('seal with one GenerateDataKey under the key and the job as encryption context, keeping the wrapped key beside the sealed bytes and dropping the plaintext one', async () => {
    const { kms, calls, given } = standInKms();
    const blob = await envelopeSealer(kmsDataKeys(kms, KEY_ARN)).seal('acc1', 'imp_1', secret);
    expect(calls).toEqual([
      {
        call: 'GenerateDataKey',
        input: { KeyId: KEY_ARN, KeySpec: 'AES_256', EncryptionContext: { account: 'acc1', job: 'imp_1' } },
      },
    ]);
    expect(Buffer.from(blob.split('.')[1] ?? '', 'base64url').toString()).toMatch(/^arn:aws:kms:/);
    expect(given).toHaveLength(1);
    expect(given[0]?.every((byte) => byte === 0)).toBe(true);
    for (const value of Object.values(secret)) expect(blob).not.toContain(value);
  });

  it('open with one Decrypt of the wrapped key, under the same key and context', async () => {
    const { kms, calls } = standInKms();
    const sealer = envelopeSealer(kmsDataKeys(kms, KEY_ARN));
    const blob = await sealer.seal('acc1', 'imp_1', secret);
    calls.length = 0;
    expect(await sealer.open('acc1', 'imp_1', blob)).toEqual(secret);
    expect(calls).toEqual([
      {
        call: 'Decrypt',
        input: {
          KeyId: KEY_ARN,
          CiphertextBlob: Buffer.from(blob.split('.')[1] ?? '', 'base64url'),
          EncryptionContext: { account: 'acc1', job: 'imp_1' },
        },
      },
    ]);
  });

  it("do not open on another job or account (KMS refuses the context), nor a seal of another stage's key", async () => {
    const { kms, calls } = standInKms();
    const sealer = envelopeSealer(kmsDataKeys(kms, KEY_ARN));
    const blob = await sealer.seal('acc1', 'imp_1', secret);
    await expect(sealer.open('acc1', 'imp_2', blob)).rejects.toThrow('InvalidCiphertextException');
    await expect(sealer.open('acc2', 'imp_1', blob)).rejects.toThrow('InvalidCiphertextException');
    expect(calls.at(-1)?.input.EncryptionContext).toEqual({ account: 'acc2', job: 'imp_1' });
    const other = standInKms(`${KEY_ARN}-other`);
    const foreign = await envelopeSealer(kmsDataKeys(other.kms, `${KEY_ARN}-other`)).seal(
      'acc1',
      'imp_1',
      secret,
    );
    await expect(sealer.open('acc1', 'imp_1', foreign)).rejects.toThrow('IncorrectKeyException');
  });

  it('refuse an answer without a 32-byte data key', async () => {
    const empty: KmsApi = {
      generateDataKey: async () => ({ Plaintext: new Uint8Array(16), CiphertextBlob: new Uint8Array(8) }),
      decrypt: async () => ({}),
    };
    const sealer = envelopeSealer(kmsDataKeys(empty, KEY_ARN));
    await expect(sealer.seal('acc1', 'imp_1', secret)).rejects.toThrow(/no data key/);
    const blob = await envelopeSealer(kmsDataKeys(standInKms().kms, KEY_ARN)).seal('acc1', 'imp_1', secret);
    await expect(sealer.open('acc1', 'imp_1', blob)).rejects.toThrow(/no data key/);
  });
});
