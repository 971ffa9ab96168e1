import { describe, expect, it } from 'vitest';
import { useTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * `expires_at` as the client sent it (decisions.md, "API keys": `expires_at` a timestamp in the API's format, whose
 * fraction is microseconds, `2027-01-31T00:00:00.000000Z`; a key never outlives the key that made it, "a 422 on
 * `expires_at` otherwise"). The schema reads the time into epoch milliseconds (lib/accounts/key-schemas.ts,
 * parseInstant), so `.123456` is kept as `.123000`: the key expires earlier than asked, and a time 1 µs after the
 * maker's expiry is silently cut back to it (201) instead of refused. Found by the review of issues 37/38.
 */
describe('a key expiry with microseconds', () => {
  const account = useTestAccount();
  const gateway = useGateway();
  const year = new Date().getUTCFullYear() + 1;

  it('is kept to the microsecond, as the API writes its times', async () => {
    const asked = `${year}-06-15T12:00:00.123456Z`;
    const made = await gateway.call('POST', '/api/keys', {
      key: account.apiKey,
      body: { name: 'precise', scopes: ['tickets:read'], expires_at: asked },
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body.data.expires_at).toBe(asked);
  });

  it('1 µs after the expiry of the key making it is a 422, not a key cut back to that expiry', async () => {
    const maker = await gateway.call('POST', '/api/keys', {
      key: account.apiKey,
      body: {
        name: 'maker',
        scopes: ['keys:manage', 'tickets:read'],
        expires_at: `${year}-06-15T12:00:00.500000Z`,
      },
    });
    expect(maker.status, maker.text).toBe(201);
    const child = await gateway.call('POST', '/api/keys', {
      key: maker.body.data.api_key,
      body: { name: 'child', scopes: ['tickets:read'], expires_at: `${year}-06-15T12:00:00.500001Z` },
    });
    expect(
      { status: child.status, expires_at: child.body.data?.expires_at ?? null },
      'a key asked to outlive its maker by 1 µs',
    ).toMatchObject({ status: 422 });
  });
});
