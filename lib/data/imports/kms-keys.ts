import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import type { DataKeys } from '#lib/imports/credentials.ts';

/**
 * Import credentials' data keys deployed (docs/imports.md, "Credentials"): the stage's KMS key (infra/constructs/
 * import-secrets.ts) makes each seal's data key (GenerateDataKey, AES_256) and unwraps it to open the seal (Decrypt),
 * both under the encryption context {account, job}: KMS refuses to unwrap a data key under any other, and CloudTrail
 * records each call with it. Only `createImport` may generate and only the import runner may decrypt (the stack's
 * grants). The plaintext data key never leaves the process; KMS keeps no copy of it.
 */
export const KMS_KEY_VARIABLE = 'IMPORT_KMS_KEY';

/** The two KMS calls a seal makes (the SDK's client answers them; a test gives its own). */
export interface KmsApi {
  generateDataKey(input: {
    KeyId: string;
    KeySpec: 'AES_256';
    EncryptionContext: Record<string, string>;
  }): Promise<{ Plaintext?: Uint8Array | undefined; CiphertextBlob?: Uint8Array | undefined }>;
  decrypt(input: {
    KeyId: string;
    CiphertextBlob: Uint8Array;
    EncryptionContext: Record<string, string>;
  }): Promise<{ Plaintext?: Uint8Array | undefined }>;
}

/** The SDK's KMS client as a KmsApi. */
export function sdkKms(client: KMSClient = new KMSClient({})): KmsApi {
  return {
    generateDataKey: (input) => client.send(new GenerateDataKeyCommand(input)),
    decrypt: (input) => client.send(new DecryptCommand(input)),
  };
}

/** Data keys from the KMS key `keyId` (its ARN): one GenerateDataKey a seal, one Decrypt an open. */
export function kmsDataKeys(kms: KmsApi, keyId: string): DataKeys {
  return {
    async generate(context) {
      const made = await kms.generateDataKey({
        KeyId: keyId,
        KeySpec: 'AES_256',
        EncryptionContext: context,
      });
      if (made.Plaintext?.length !== 32 || !made.CiphertextBlob) throw new Error('KMS made no data key');
      return { plaintext: made.Plaintext, wrapped: made.CiphertextBlob };
    },
    async unwrap(wrapped, context) {
      // KeyId named: a blob wrapped under any other key is refused, not decrypted with it.
      const opened = await kms.decrypt({ KeyId: keyId, CiphertextBlob: wrapped, EncryptionContext: context });
      if (opened.Plaintext?.length !== 32) throw new Error('KMS unwrapped no data key');
      return opened.Plaintext;
    },
  };
}
