import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  newSecretsKey,
  openCredentials,
  SECRETS_KEY_VARIABLE,
  sealCredentials,
} from '#lib/imports/credentials.ts';

/** Import credentials sealed at rest (lib/imports/credentials.ts): AES-256-GCM, bound to their job. */
let was: string | undefined;
beforeAll(() => {
  was = process.env[SECRETS_KEY_VARIABLE];
  process.env[SECRETS_KEY_VARIABLE] = newSecretsKey();
});
afterAll(() => {
  if (was === undefined) delete process.env[SECRETS_KEY_VARIABLE];
  else process.env[SECRETS_KEY_VARIABLE] = was;
});

const secret = { subdomain: 'acme', email: 'admin@acme.test', api_token: 'zd-token-4471' };

describe('import credentials', () => {
  it('open as sealed, and the blob holds none of them in the clear; each seal differs', () => {
    const blob = sealCredentials('acc1', 'imp_1', secret);
    expect(openCredentials('acc1', 'imp_1', blob)).toEqual(secret);
    for (const value of Object.values(secret)) expect(blob).not.toContain(value);
    expect(sealCredentials('acc1', 'imp_1', secret)).not.toBe(blob);
  });

  it('do not open for another job or account, altered, or under another key', () => {
    const blob = sealCredentials('acc1', 'imp_1', secret);
    expect(() => openCredentials('acc1', 'imp_2', blob)).toThrow();
    expect(() => openCredentials('acc2', 'imp_1', blob)).toThrow();
    const [version, nonce, tag, sealed] = blob.split('.');
    const flipped = `${sealed?.[0] === 'A' ? 'B' : 'A'}${sealed?.slice(1)}`;
    expect(() => openCredentials('acc1', 'imp_1', [version, nonce, tag, flipped].join('.'))).toThrow();
    expect(() => openCredentials('acc1', 'imp_1', 'not a blob')).toThrow();
    process.env[SECRETS_KEY_VARIABLE] = newSecretsKey();
    expect(() => openCredentials('acc1', 'imp_1', blob)).toThrow();
  });

  it('refuse a key that is not 32 bytes', () => {
    process.env[SECRETS_KEY_VARIABLE] = Buffer.alloc(16).toString('base64');
    expect(() => sealCredentials('acc1', 'imp_1', secret)).toThrow(/32 bytes/);
    process.env[SECRETS_KEY_VARIABLE] = newSecretsKey();
  });
});
