import { KMS_KEY_VARIABLE, kmsDataKeys, sdkKms } from '#lib/data/imports/kms-keys.ts';
import { envelopeSealer, fileDataKeys, type Sealer, secretsKey } from './credentials.ts';

/**
 * The Sealer the environment names (docs/imports.md, "Credentials"): deployed, IMPORT_KMS_KEY (the stage's KMS key,
 * set by the stack on `createImport` and the import runner only); else the file key IMPORT_SECRETS_KEY (`npm start`,
 * the admin CLI, tests). The variables are read when it seals or opens, not when it is handed over: a request that
 * is refused before its credentials are sealed (a 422, a 409) never needs a key, and a process without one answers
 * it as any other. One per process, made again when the variables change (as in tests). The handlers hand it to the
 * jobs API and the runner; nothing below them reads these variables.
 */
let current: { name: string; sealer: Sealer } | undefined;

function named(): Sealer {
  const keyId = process.env[KMS_KEY_VARIABLE];
  const name = keyId ? `kms:${keyId}` : `file:${secretsKey().toString('base64')}`;
  if (current?.name !== name) {
    const keys = keyId ? kmsDataKeys(sdkKms(), keyId) : fileDataKeys(secretsKey());
    current = { name, sealer: envelopeSealer(keys) };
  }
  return current.sealer;
}

const fromEnvironment: Sealer = {
  seal: (accountId, jobId, credentials) => named().seal(accountId, jobId, credentials),
  open: (accountId, jobId, blob) => named().open(accountId, jobId, blob),
};

export function environmentSealer(): Sealer {
  return fromEnvironment;
}
