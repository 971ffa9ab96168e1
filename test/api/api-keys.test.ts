import { createHash, randomBytes } from 'node:crypto';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { handler as authorize } from '#functions/authorizer.ts';
import { settleLastUseWrites } from '#lib/accounts/api-keys.ts';
import { checksumOf } from '#lib/accounts/key-format.ts';
import { hashApiKey } from '#lib/accounts/key-hash.ts';
import { createKey, MAX_LIVE_KEYS } from '#lib/accounts/key-making.ts';
import { listKeys, revokeKeyById } from '#lib/accounts/key-management.ts';
import { apiKeyKeys } from '#lib/data/keys.ts';
import { dynamo, getItem, tableName } from '#lib/data/store/client.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { createTestAccount, useTestAccount } from '#test/support/accounts.ts';
import { keyItems, later } from '#test/support/api-keys.ts';
import { atTime } from '#test/support/clock.ts';
import { tokenEvent } from '#test/support/events.ts';
import { withFault } from '#test/support/faults.ts';
import { useGateway } from '#test/support/http.ts';

const bearer = (key: string) => tokenEvent(`Bearer ${key}`);

/** A key stored exactly as the code before scopes stored it: SHA-256, no scopes, no expiry, no name. */
async function legacyKey(accountId: string): Promise<string> {
  const secret = `dpk_${randomBytes(32).toString('base64url')}`;
  const hash = createHash('sha256').update(secret).digest('hex');
  const id = `key_${randomBytes(8).toString('hex')}`;
  const createdAt = '2026-11-01T00:00:00.000000Z';
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        pk: `API_KEY#${hash}`,
        sk: 'API_KEY',
        type: 'api_key_lookup',
        keyId: id,
        accountId,
        revokedAt: null,
        lastUsedAt: null,
      },
    }),
  );
  await dynamo.send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        pk: `API_KEYS#${accountId}`,
        sk: `API_KEY#${id}`,
        gsi1pk: `API_KEY_ID#${id}`,
        gsi1sk: 'API_KEY',
        type: 'api_key',
        id,
        accountId,
        hash,
        prefix: secret.slice(0, 12),
        createdAt,
        lastUsedAt: null,
        revokedAt: null,
      },
    }),
  );
  return secret;
}

describe('authorizer: key format, expiry, revocation, rotation', () => {
  const account = useTestAccount();
  const gateway = useGateway(0);

  it('refuses a key one character off (401)', async () => {
    const key = account.apiKey;
    const flipped = key.slice(0, 10) + (key[10] === 'a' ? 'b' : 'a') + key.slice(11);
    await expect(authorize(bearer(flipped))).rejects.toThrow('Unauthorized');
    expect((await gateway.call('GET', '/api/tickets', { key: flipped })).status).toBe(401);
  });

  it('refuses a key of valid shape whose checksum fails without any store read', async () => {
    const body = `dpk_${'Q'.repeat(40)}`;
    const good = checksumOf(body);
    const wrong = body + (good.startsWith('0') ? `1${good.slice(1)}` : `0${good.slice(1)}`);
    const { result, operations } = await withFault(undefined, () =>
      authorize(bearer(wrong)).then(
        () => 'allowed',
        (error: Error) => error.message,
      ),
    );
    expect(result).toBe('Unauthorized');
    expect(operations).toEqual([]);
    // The checksum holding is not enough: an unknown key of the format costs the one lookup.
    const unknown = await withFault(undefined, () => authorize(bearer(body + good)).catch(() => 'refused'));
    expect(unknown.result).toBe('refused');
    expect(unknown.operations).toEqual(['GetItem']);
  });

  it('refuses an expired key (401) and takes it before its expiry', async () => {
    const { api_key } = await createKey(account.accountId, {
      name: 'short-lived',
      scopes: ['tickets:read'],
      expiresAt: (Date.now() + 1_500) * 1000,
    });
    expect((await gateway.call('GET', '/api/tickets', { key: api_key })).status).toBe(200);
    await later(1_600, async () => {
      expect((await gateway.call('GET', '/api/tickets', { key: api_key })).status).toBe(401);
    });
  });

  it('refuses a revoked key (401)', async () => {
    const created = await createKey(account.accountId, { name: 'revoked', scopes: ['*'] });
    expect((await gateway.call('GET', '/api/tickets', { key: created.api_key })).status).toBe(200);
    await revokeKeyById(created.id);
    const answer = await gateway.call('GET', '/api/tickets', { key: created.api_key });
    expect(answer).toMatchObject({ status: 401, body: { message: 'Unauthenticated.' } });
  });

  it('rotates with overlap: both keys work, then the old one is refused (401) and the new one is not', async () => {
    const manager = await createKey(account.accountId, { name: 'manager', scopes: ['*'] });
    const old = await createKey(account.accountId, { name: 'integration', scopes: ['tickets:read'] });
    const rotated = await gateway.call('POST', `/api/keys/${old.id}/rotate`, {
      key: manager.api_key,
      body: { expire_old_in_seconds: 2 },
    });
    expect(rotated.status).toBe(201);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
    expect(rotated.body.data).toMatchObject({
      name: 'integration',
      scopes: ['tickets:read'],
      expires_at: null,
    });
    const fresh = rotated.body.data.api_key as string;
    expect(fresh).not.toBe(old.api_key);
    expect((await gateway.call('GET', '/api/tickets', { key: old.api_key })).status).toBe(200);
    expect((await gateway.call('GET', '/api/tickets', { key: fresh })).status).toBe(200);
    await later(2_100, async () => {
      expect((await gateway.call('GET', '/api/tickets', { key: old.api_key })).status).toBe(401);
      expect((await gateway.call('GET', '/api/tickets', { key: fresh })).status).toBe(200);
    });
    // The new key keeps the old one's scopes: nothing more.
    expect((await gateway.call('GET', '/api/deals', { key: fresh })).status).toBe(403);
  });

  it('keeps a key stored before scopes working, with every scope', async () => {
    const legacy = await legacyKey(account.accountId);
    const allowed = await authorize(bearer(legacy));
    expect(allowed.context).toMatchObject({ accountId: account.accountId, scopes: '*' });
    for (const path of [
      '/api/tickets',
      '/api/deals',
      '/api/contacts',
      '/api/events',
      '/api/webhooks',
      '/api/keys',
    ]) {
      expect((await gateway.call('GET', path, { key: legacy })).status, path).toBe(200);
    }
    const created = await gateway.call('POST', '/api/keys', {
      key: legacy,
      body: { name: 'from a legacy key', scopes: ['*'] },
    });
    expect(created.status).toBe(201);
    const listed = (await listKeys(account.accountId)).find((k) => k.prefix === legacy.slice(0, 12));
    expect(listed).toMatchObject({ name: null, scopes: ['*'], expires_at: null });
    const flipped = legacy.slice(0, -1) + (legacy.endsWith('a') ? 'b' : 'a');
    await expect(authorize(bearer(flipped))).rejects.toThrow('Unauthorized');
  });
});

describe('last_used_at', () => {
  it('is written on the record at most once a minute per key, never on the lookup item', async () => {
    const account = await createTestAccount();
    const first = await withFault(undefined, async () => {
      await authorize(bearer(account.apiKey));
      await settleLastUseWrites();
    });
    expect(first.operations.sort()).toEqual(['GetItem', 'GetItem', 'UpdateItem']);
    const second = await withFault(undefined, async () => {
      await authorize(bearer(account.apiKey));
      await settleLastUseWrites();
    });
    expect(second.operations.sort()).toEqual(['GetItem', 'GetItem']);
    const [key] = await listKeys(account.accountId);
    expect(key?.last_used_at).toMatch(/Z$/);
    // The lookup item the authorizer reads is not written for it.
    const lookup = await getItem(apiKeyKeys.lookup(hashApiKey(account.apiKey)));
    expect(lookup).toBeDefined();
    expect(lookup).not.toHaveProperty('lastUsedAt');
  });

  it('never delays the answer: a last-use write that stalls, or fails, leaves the decision as it is', async () => {
    const account = await createTestAccount();
    const stall = 3_000;
    // The last-use write answers `stall` of the service's time late; the clock moves only when the test says.
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'UpdateCommand') await sleep(stall);
        return next(args);
      },
      { step: 'initialize', name: 'stallLastUse', priority: 'high' },
    );
    await atTime(nowMillis(), async (clock) => {
      try {
        const started = nowMillis();
        const allowed = await authorize(bearer(account.apiKey));
        expect(nowMillis() - started).toBeLessThan(stall / 2);
        expect(allowed.policyDocument.Statement[0]).toMatchObject({ Effect: 'Allow' });
        await clock.advance(stall);
        await settleLastUseWrites();
      } finally {
        dynamo.middlewareStack.remove('stallLastUse');
      }
    });
    const failing = await createTestAccount();
    // Calls: the key's lookup, the account, the last-use write (lost).
    const { result } = await withFault({ at: 3, mode: 'lost-request' }, async () => {
      const decision = await authorize(bearer(failing.apiKey));
      await settleLastUseWrites();
      return decision;
    });
    expect(result.policyDocument.Statement[0]).toMatchObject({ Effect: 'Allow' });
  });
});

describe('/api/keys', () => {
  const account = useTestAccount();
  const gateway = useGateway(0);

  it('creates a key (shown once), lists keys without secrets, and revokes', async () => {
    const created = await gateway.call('POST', '/api/keys', {
      key: account.apiKey,
      body: {
        name: 'Dashboard',
        scopes: ['tickets:read', 'deals:read'],
        expires_at: '2099-01-01T00:00:00+02:00',
      },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: expect.stringMatching(/^key_[0-9a-f]{16}$/),
      api_key: expect.stringMatching(/^dpk_[0-9A-Za-z]{46}$/),
      name: 'Dashboard',
      scopes: ['tickets:read', 'deals:read'],
      created_at: expect.any(String),
      expires_at: '2098-12-31T22:00:00.000000Z',
    });
    const key = created.body.data.api_key as string;
    expect((await gateway.call('GET', '/api/tickets', { key })).status).toBe(200);
    expect((await gateway.call('POST', '/api/tickets', { key, body: {} })).body).toEqual({
      message: 'This key lacks the scope tickets:write.',
    });

    const listed = await gateway.call('GET', '/api/keys', { key: account.apiKey });
    expect(listed.status).toBe(200);
    expect(listed.text).not.toContain(key);
    expect(listed.body.data.find((k: { id: string }) => k.id === created.body.data.id)).toEqual({
      id: created.body.data.id,
      name: 'Dashboard',
      prefix: key.slice(0, 12),
      scopes: ['tickets:read', 'deals:read'],
      created_at: created.body.data.created_at,
      expires_at: '2098-12-31T22:00:00.000000Z',
      last_used_at: expect.any(String),
      revoked_at: null,
    });

    const revoked = await gateway.call('DELETE', `/api/keys/${created.body.data.id}`, {
      key: account.apiKey,
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toMatchObject({ id: created.body.data.id, revoked_at: expect.any(String) });
    expect((await gateway.call('GET', '/api/tickets', { key })).status).toBe(401);
  });

  it('refuses bad input with a 422 and writes nothing', async () => {
    const before = await keyItems(account.accountId);
    const cases: [Record<string, unknown>, string][] = [
      [{ scopes: ['tickets:read'] }, 'name'],
      [{ name: 'x', scopes: [] }, 'scopes'],
      [{ name: 'x', scopes: ['tickets:delete'] }, 'scopes.0'],
      [{ name: 'x', scopes: ['tickets:read'], expires_at: '2020-01-01T00:00:00Z' }, 'expires_at'],
      [{ name: 'x', scopes: ['tickets:read'], expires_at: '2099-01-01' }, 'expires_at'],
    ];
    for (const [body, field] of cases) {
      const answer = await gateway.call('POST', '/api/keys', { key: account.apiKey, body });
      expect(answer.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(answer.body.errors)).toContain(field);
    }
    expect(await keyItems(account.accountId)).toEqual(before);
  });

  it('a keys:manage key cannot mint or rotate past its own scopes (403), a :write counts as its :read', async () => {
    const manager = (
      await createKey(account.accountId, { name: 'limited', scopes: ['keys:manage', 'tickets:write'] })
    ).api_key;
    const before = await keyItems(account.accountId);
    const broader = await gateway.call('POST', '/api/keys', {
      key: manager,
      body: { name: 'broader', scopes: ['tickets:read', 'deals:read'] },
    });
    expect(broader).toMatchObject({ status: 403, body: { message: 'This key lacks the scope deals:read.' } });
    const everything = await gateway.call('POST', '/api/keys', {
      key: manager,
      body: { name: 'everything', scopes: ['*'] },
    });
    expect(everything).toMatchObject({ status: 403, body: { message: 'This key lacks the scope *.' } });
    const wide = await createKey(account.accountId, { name: 'wide', scopes: ['deals:write'] });
    const before2 = await keyItems(account.accountId);
    const rotate = await gateway.call('POST', `/api/keys/${wide.id}/rotate`, {
      key: manager,
      body: { expire_old_in_seconds: 0 },
    });
    expect(rotate).toMatchObject({ status: 403, body: { message: 'This key lacks the scope deals:write.' } });
    expect(await keyItems(account.accountId)).toEqual(before2);
    expect(before2.length).toBe(before.length + 1);

    const narrower = await gateway.call('POST', '/api/keys', {
      key: manager,
      body: { name: 'reader', scopes: ['tickets:read', 'keys:manage'] },
    });
    expect(narrower.status).toBe(201);
  });

  it("never reaches another account's keys: its list is its own, a foreign id is a 404 and changes nothing", async () => {
    const other = await createTestAccount();
    const [otherKey] = await listKeys(other.accountId);
    const listed = await gateway.call('GET', '/api/keys', { key: account.apiKey });
    expect(listed.body.data.map((k: { id: string }) => k.id)).not.toContain(otherKey?.id);
    const before = await keyItems(other.accountId);
    const revoke = await gateway.call('DELETE', `/api/keys/${otherKey?.id}`, { key: account.apiKey });
    expect(revoke).toMatchObject({ status: 404, body: { message: 'Not found.' } });
    const rotate = await gateway.call('POST', `/api/keys/${otherKey?.id}/rotate`, {
      key: account.apiKey,
      body: { expire_old_in_seconds: 0 },
    });
    expect(rotate.status).toBe(404);
    expect(await keyItems(other.accountId)).toEqual(before);
    expect((await gateway.call('GET', '/api/tickets', { key: other.apiKey })).status).toBe(200);
  });

  it('lets a key revoke itself, its last keys:manage key: 200, and it is refused from then on', async () => {
    const own = await createTestAccount();
    const revoked = await gateway.call('DELETE', `/api/keys/${(await listKeys(own.accountId))[0]?.id}`, {
      key: own.apiKey,
    });
    expect(revoked.status).toBe(200);
    expect((await gateway.call('GET', '/api/keys', { key: own.apiKey })).status).toBe(401);
    // The operator's command line makes the next one.
    const next = await createKey(own.accountId, { name: 'after', scopes: ['keys:manage'] });
    expect((await gateway.call('GET', '/api/keys', { key: next.api_key })).status).toBe(200);
  });
});

describe('the 100-live-key limit', () => {
  const gateway = useGateway(0);

  it('refuses the 101st live key (422, nothing written); revoked and expired keys do not count', async () => {
    const account = await createTestAccount();
    // The first apply made one key; an expired and a revoked one do not count.
    const expiring = await createKey(account.accountId, {
      name: 'soon',
      scopes: ['*'],
      // Made past its expiry (the data layer takes it; the API refuses an expiry in the past).
      expiresAt: (Date.now() - 1_000) * 1000,
    });
    const revoked = await createKey(account.accountId, { name: 'gone', scopes: ['*'] });
    await revokeKeyById(revoked.id);
    for (let i = 1; i < MAX_LIVE_KEYS; i++)
      await createKey(account.accountId, { name: `k${i}`, scopes: ['*'] });
    const before = await keyItems(account.accountId);
    const refused = await gateway.call('POST', '/api/keys', {
      key: account.apiKey,
      body: { name: 'one too many', scopes: ['tickets:read'] },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.message).toContain('at most 100 live keys');
    expect(await keyItems(account.accountId)).toEqual(before);
    // Rotation with an overlap needs room for both keys; without one, the old key stops at once.
    const [first] = await listKeys(account.accountId);
    const overlap = await gateway.call('POST', `/api/keys/${first?.id}/rotate`, {
      key: account.apiKey,
      body: { expire_old_in_seconds: 60 },
    });
    expect(overlap.status).toBe(422);
    const victim = (await listKeys(account.accountId)).find((k) => k.name === 'k2');
    await revokeKeyById(victim?.id ?? '');
    const allowed = await gateway.call('POST', '/api/keys', {
      key: account.apiKey,
      body: { name: 'room again', scopes: ['tickets:read'] },
    });
    expect(allowed.status).toBe(201);
    expect(expiring.id).toBeDefined();
  });

  it('holds under concurrent creates: with room for 2, exactly 2 of 6 concurrent creates land', async () => {
    const account = await createTestAccount();
    for (let i = 1; i < MAX_LIVE_KEYS - 2; i++)
      await createKey(account.accountId, { name: `k${i}`, scopes: ['*'] });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        gateway.call('POST', '/api/keys', {
          key: account.apiKey,
          body: { name: `race ${i}`, scopes: ['*'] },
        }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 422, 422, 422, 422]);
    const live = (await listKeys(account.accountId)).filter((k) => !k.revoked_at);
    expect(live.length).toBe(MAX_LIVE_KEYS);
  });
});

describe('key writes under an Idempotency-Key and faults', () => {
  const gateway = useGateway(30);

  it('a replay answers the kept answer without the secret, and writes no second key', async () => {
    const account = await createTestAccount();
    const send = () =>
      gateway.call('POST', '/api/keys', {
        key: account.apiKey,
        body: { name: 'Once', scopes: ['tickets:read'] },
        headers: { 'Idempotency-Key': 'create-once' },
      });
    const first = await send();
    expect(first.status).toBe(201);
    const again = await send();
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual({ data: { ...first.body.data, api_key: null } });
    expect((await listKeys(account.accountId)).filter((k) => k.name === 'Once')).toHaveLength(1);
    // The kept answer holds no secret: nothing of the account's stored items does.
    const everything = JSON.stringify(await keyItems(account.accountId));
    expect(everything).not.toContain(first.body.data.api_key);
  });
});
