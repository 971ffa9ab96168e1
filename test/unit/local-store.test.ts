import { describe, expect, it } from 'vitest';
import { localStoreConfig } from '#lib/data/store/local-store.ts';

describe('the client settings for DynamoDB Local', () => {
  it('sends a fixed Authorization header to a loopback endpoint, unsigned', async () => {
    for (const endpoint of ['http://127.0.0.1:8000', 'http://localhost:4567', 'http://[::1]:8000']) {
      const [scheme] = localStoreConfig(endpoint).httpAuthSchemes ?? [];
      expect(scheme?.schemeId, endpoint).toBe('aws.auth#sigv4');
      const signed = (await scheme?.signer.sign({ headers: {} } as never, {}, {})) as unknown as {
        headers: Record<string, string>;
      };
      expect(signed.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=local\//);
    }
  });

  it('leaves any other endpoint to SigV4', () => {
    const config = localStoreConfig('https://dynamodb.eu-west-1.amazonaws.com');
    expect(config.httpAuthSchemes).toBeUndefined();
    expect(config.endpoint).toBe('https://dynamodb.eu-west-1.amazonaws.com');
  });
});
