import { describe, expect, it } from 'vitest';
import { handler } from '#functions/authorizer.ts';
import { settleLastUseWrites } from '#lib/accounts/api-keys.ts';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { edgeKeyValue } from '#lib/accounts/edge-limits.ts';
import { hashApiKey } from '#lib/accounts/key-hash.ts';
import { listKeys, revokeKeyById } from '#lib/accounts/key-management.ts';
import { findApiKeyByHash } from '#lib/data/api-keys/records.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { tokenEvent } from '#test/support/events.ts';

describe('authorizer (TOKEN)', () => {
  it('allows a valid key on every route, passing the account and plan as context', async () => {
    const account = await createTestAccount({ plan: 'enterprise' });
    const result = await handler(tokenEvent(`Bearer ${account.apiKey}`));
    expect(result.context).toMatchObject({ accountId: account.accountId, plan: 'enterprise' });
    // The account's API Gateway API key (apiKeySource AUTHORIZER): the edge throttles it at its usage plan's rate.
    expect(result.usageIdentifierKey).toBe(edgeKeyValue(account.accountId));
    expect(result.policyDocument.Statement).toEqual([
      {
        Action: 'execute-api:Invoke',
        Effect: 'Allow',
        Resource: 'arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*',
      },
    ]);
  });

  it('matches the scheme case-insensitively but the key exactly', async () => {
    const account = await createTestAccount();
    await expect(handler(tokenEvent(`bearer ${account.apiKey}`))).resolves.toMatchObject({
      principalId: expect.any(String),
    });
    await expect(handler(tokenEvent(`BEARER ${account.apiKey}`))).resolves.toMatchObject({
      principalId: expect.any(String),
    });
    const flipped = account.apiKey.slice(0, -1) + (account.apiKey.endsWith('a') ? 'b' : 'a');
    await expect(handler(tokenEvent(`Bearer ${flipped}`))).rejects.toThrow('Unauthorized');
    await expect(handler(tokenEvent(`Bearer ${account.apiKey.toUpperCase()}`))).rejects.toThrow(
      'Unauthorized',
    );
  });

  it.each([
    ['empty', ''],
    ['no scheme', 'dpk_abc'],
    ['other scheme', 'Basic dXNlcjpwYXNz'],
    ['bearer without key', 'Bearer '],
    ['unknown key', 'Bearer dpk_thisKeyWasNeverIssuedToAnyoneAtAll000000000'],
    ['two tokens', 'Bearer dpk_a dpk_b'],
  ])('rejects a %s header as Unauthorized (401)', async (_label, header) => {
    await expect(handler(tokenEvent(header))).rejects.toThrow('Unauthorized');
  });

  it('rejects a revoked key', async () => {
    const account = await createTestAccount();
    const lookup = await findApiKeyByHash(hashApiKey(account.apiKey));
    expect(lookup).toBeDefined();
    await revokeKeyById(lookup?.keyId ?? '');
    await expect(handler(tokenEvent(`Bearer ${account.apiKey}`))).rejects.toThrow('Unauthorized');
  });

  it('denies (403) an account on the Startup plan', async () => {
    const account = await createTestAccount({ plan: 'startup' });
    const result = await handler(tokenEvent(`Bearer ${account.apiKey}`));
    expect(result.policyDocument.Statement[0]).toMatchObject({ Effect: 'Deny' });
    expect(result.context).toBeUndefined();
    expect(result.usageIdentifierKey).toBeUndefined();
  });

  it('denies (403) a suspended account, and allows it again once reinstated', async () => {
    const account = await createTestAccount();
    const file = { slug: account.slug, name: account.account.name, plan: 'pro' };
    await applyAccountFile({ ...file, suspended: true });
    const denied = await handler(tokenEvent(`Bearer ${account.apiKey}`));
    expect(denied.policyDocument.Statement[0]).toMatchObject({ Effect: 'Deny' });
    await applyAccountFile({ ...file, suspended: false });
    const allowed = await handler(tokenEvent(`Bearer ${account.apiKey}`));
    expect(allowed.policyDocument.Statement[0]).toMatchObject({ Effect: 'Allow' });
  });

  it('records when a key was last used, on its record (the lookup item the authorizer reads is not written)', async () => {
    const account = await createTestAccount();
    const [before] = await listKeys(account.accountId);
    expect(before?.last_used_at).toBeNull();
    await handler(tokenEvent(`Bearer ${account.apiKey}`));
    await settleLastUseWrites();
    const [after] = await listKeys(account.accountId);
    expect(after?.last_used_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
  });
});
