import { describe, expect, it } from 'vitest';
import { createKey } from '#lib/accounts/key-making.ts';
import { listKeys, revokeKeyById } from '#lib/accounts/key-management.ts';
import { formatTimestamp } from '#lib/time.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { keyItems, later } from '#test/support/api-keys.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Keys that cannot outlive what made them (decisions.md, "API keys: scopes, expiry, rotation"; issue 37 items 9
 * and 10): the key routes check the calling key as stored, whatever the authorizer cached; a key makes keys that
 * expire no later than itself; a key rotates once, its successor expiring when it would have; a time that names
 * no real instant is refused; an id of no key's shape is a 404.
 */

const DAY_MS = 86_400_000;
const at = (ms: number) => formatTimestamp(ms * 1000);

describe('the key routes check the calling key as stored, within the authorizer cache', () => {
  const account = useTestAccount();
  // The deployed cache time: an answer cached for a key stays 30 s whatever happens to the key.
  const gateway = useGateway(30);

  /** Every key route, called with `key`: the answers' statuses. */
  async function keyRoutes(key: string, target: string) {
    const answers = [
      await gateway.call('POST', '/api/keys', { key, body: { name: 'child', scopes: ['tickets:read'] } }),
      await gateway.call('GET', '/api/keys', { key }),
      await gateway.call('POST', `/api/keys/${target}/rotate`, { key, body: { expire_old_in_seconds: 60 } }),
      await gateway.call('DELETE', `/api/keys/${target}`, { key }),
    ];
    return answers.map((a) => a.status);
  }

  it('a revoked key, still allowed by the cache elsewhere, mints, lists, rotates and revokes nothing: 401', async () => {
    const caller = await createKey(account.accountId, { name: 'leaked', scopes: ['*'] });
    const target = await createKey(account.accountId, { name: 'target', scopes: ['tickets:read'] });
    // Its answer is cached now; then it is revoked.
    expect((await gateway.call('GET', '/api/keys', { key: caller.api_key })).status).toBe(200);
    await revokeKeyById(caller.id);
    // The cache still lets it through where the stored key is not read.
    expect((await gateway.call('GET', '/api/tickets', { key: caller.api_key })).status).toBe(200);
    const before = await keyItems(account.accountId);
    expect(await keyRoutes(caller.api_key, target.id)).toEqual([401, 401, 401, 401]);
    expect(await keyItems(account.accountId)).toEqual(before);
  });

  it('a key rotated out (no overlap) or past its expiry is refused on the key routes at once', async () => {
    const rotated = await createKey(account.accountId, { name: 'rotated', scopes: ['*'] });
    const expiring = await createKey(account.accountId, {
      name: 'expiring',
      scopes: ['*'],
      expiresAt: (Date.now() + 60_000) * 1000,
    });
    const target = await createKey(account.accountId, { name: 'target', scopes: ['tickets:read'] });
    for (const key of [rotated.api_key, expiring.api_key]) {
      expect((await gateway.call('GET', '/api/keys', { key })).status).toBe(200);
    }
    const emergency = await gateway.call('POST', `/api/keys/${rotated.id}/rotate`, {
      key: account.apiKey,
      body: { expire_old_in_seconds: 0 },
    });
    expect(emergency.status).toBe(201);
    const before = await keyItems(account.accountId);
    expect(await keyRoutes(rotated.api_key, target.id)).toEqual([401, 401, 401, 401]);
    await later(61_000, async () => {
      expect(await keyRoutes(expiring.api_key, target.id)).toEqual([401, 401, 401, 401]);
    });
    expect(await keyItems(account.accountId)).toEqual(before);
    // The successor works.
    const successor = emergency.body.data.api_key as string;
    expect((await gateway.call('GET', '/api/keys', { key: successor })).status).toBe(200);
  });
});

describe('key lifetimes', () => {
  const account = useTestAccount();
  const gateway = useGateway(0);

  it('a key with an expiry makes only keys that expire no later: 422 on expires_at otherwise, writing nothing', async () => {
    const expiresAt = Date.now() + 10 * DAY_MS;
    const parent = await createKey(account.accountId, {
      name: 'parent',
      scopes: ['*'],
      expiresAt: expiresAt * 1000,
    });
    const before = await keyItems(account.accountId);
    for (const expires_at of [undefined, at(expiresAt + 1_000), '2099-01-01T00:00:00Z']) {
      const answer = await gateway.call('POST', '/api/keys', {
        key: parent.api_key,
        body: { name: 'child', scopes: ['tickets:read'], ...(expires_at ? { expires_at } : {}) },
      });
      expect(answer.status, String(expires_at)).toBe(422);
      expect(Object.keys(answer.body.errors)).toEqual(['expires_at']);
    }
    expect(await keyItems(account.accountId)).toEqual(before);
    const same = await gateway.call('POST', '/api/keys', {
      key: parent.api_key,
      body: { name: 'child', scopes: ['tickets:read'], expires_at: at(expiresAt) },
    });
    expect(same.status).toBe(201);
    expect(same.body.data.expires_at).toBe(at(expiresAt));
  });

  it('a rotation by an expiring key whose new key would outlive it is a 422; the new key expires when the old would have, whatever the overlap', async () => {
    const expiresAt = Date.now() + 3 * DAY_MS;
    const manager = await createKey(account.accountId, {
      name: 'manager',
      scopes: ['*'],
      expiresAt: expiresAt * 1000,
    });
    const forever = await createKey(account.accountId, { name: 'forever', scopes: ['tickets:read'] });
    const before = await keyItems(account.accountId);
    const refused = await gateway.call('POST', `/api/keys/${forever.id}/rotate`, {
      key: manager.api_key,
      body: { expire_old_in_seconds: 60 },
    });
    expect(refused.status).toBe(422);
    expect(Object.keys(refused.body.errors)).toEqual(['expires_at']);
    expect(await keyItems(account.accountId)).toEqual(before);

    // Rotated by a key that never expires: the week's overlap changes nothing of the new key's lifetime.
    const never = await gateway.call('POST', `/api/keys/${forever.id}/rotate`, {
      key: account.apiKey,
      body: { expire_old_in_seconds: 604_800 },
    });
    expect(never.status).toBe(201);
    expect(never.body.data.expires_at).toBeNull();
    const dated = await createKey(account.accountId, {
      name: 'dated',
      scopes: ['tickets:read'],
      expiresAt: (Date.now() + 2 * DAY_MS) * 1000,
    });
    const rotated = await gateway.call('POST', `/api/keys/${dated.id}/rotate`, {
      key: manager.api_key,
      body: { expire_old_in_seconds: 604_800 },
    });
    expect(rotated.status).toBe(201);
    expect(rotated.body.data.expires_at).toBe(dated.expires_at);
  });

  it('a key rotates once: a second rotation is a 409 (the same Idempotency-Key answers the first again)', async () => {
    const old = await createKey(account.accountId, { name: 'once', scopes: ['tickets:read'] });
    const rotate = (idempotencyKey?: string) =>
      gateway.call('POST', `/api/keys/${old.id}/rotate`, {
        key: account.apiKey,
        body: { expire_old_in_seconds: 3_600 },
        headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {},
      });
    const first = await rotate('rotate-once');
    expect(first.status).toBe(201);
    const before = await keyItems(account.accountId);
    const replay = await rotate('rotate-once');
    expect(replay.status).toBe(201);
    expect(replay.body.data).toEqual({ ...first.body.data, api_key: null });
    for (const second of [await rotate(), await rotate('another')]) {
      expect(second.status).toBe(409);
      expect(second.body.message).toMatch(/already been rotated/);
    }
    expect(await keyItems(account.accountId)).toEqual(before);
    expect((await listKeys(account.accountId)).filter((k) => k.name === 'once')).toHaveLength(2);
  });

  it('a time that names no real instant is a 422, never rolled over', async () => {
    const before = await keyItems(account.accountId);
    for (const expires_at of ['2099-02-30T00:00:00Z', '2099-04-31T12:00:00+02:00', '2099-01-01T24:00:00Z']) {
      const answer = await gateway.call('POST', '/api/keys', {
        key: account.apiKey,
        body: { name: 'x', scopes: ['tickets:read'], expires_at },
      });
      expect(answer.status, expires_at).toBe(422);
      expect(Object.keys(answer.body.errors)).toEqual(['expires_at']);
    }
    expect(await keyItems(account.accountId)).toEqual(before);
  });

  it('an id of no key’s shape is a 404 for revoke and rotate, however long', async () => {
    for (const id of [`key_${'a'.repeat(1_100)}`, 'x'.repeat(1_100), 'key_ABCDEF0123456789', 'key_']) {
      const revoke = await gateway.call('DELETE', `/api/keys/${id}`, { key: account.apiKey });
      expect(revoke, id.slice(0, 20)).toMatchObject({ status: 404, body: { message: 'Not found.' } });
      const rotate = await gateway.call('POST', `/api/keys/${id}/rotate`, {
        key: account.apiKey,
        body: { expire_old_in_seconds: 0 },
      });
      expect(rotate.status, id.slice(0, 20)).toBe(404);
    }
  });
});
