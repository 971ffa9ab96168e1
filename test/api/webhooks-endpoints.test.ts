import { createHash } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { idempotencyKeys, webhookKeys } from '#lib/data/keys.ts';
import { dynamo, getItem, tableName } from '#lib/data/store/client.ts';
import { getEndpoint } from '#lib/data/webhooks/webhooks.ts';
import { MAX_ENDPOINTS } from '#lib/webhooks/types.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * Webhook endpoints over the local gateway (decisions.md, "Webhooks"): registration and its URL policy as the
 * local stage applies it (the deployed stages' rules are test/unit/webhook-url-policy.test.ts), the secret shown
 * on create and rotate only, the limit of 20, and accounts kept apart.
 */
const gateway = useGateway();

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const RECEIVER = 'http://127.0.0.1:4599/hooks';

async function setUp() {
  const account = await createTestAccount();
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    gateway.call(method, path, {
      key: account.apiKey,
      ...(body !== undefined ? { body } : {}),
      ...(headers ? { headers } : {}),
    });
  const list = async () => {
    const answer = await call('GET', '/api/webhooks');
    expect(answer.status).toBe(200);
    return answer.body.data as { id: string; url: string }[];
  };
  return { account, call, list };
}

const endpointBody = (extra: Record<string, unknown> = {}) => ({
  url: RECEIVER,
  events: ['ticket.created', 'deal.*'],
  description: 'CRM sync',
  ...extra,
});

describe('webhook endpoints', () => {
  it('round trip: create, list, get, update, rotate, delete', async () => {
    const { account, call, list } = await setUp();
    const created = await call('POST', '/api/webhooks', endpointBody());
    expect(created.status).toBe(201);
    const endpoint = created.body.data;
    expect(endpoint).toEqual({
      id: expect.stringMatching(/^we_[0-9a-f]{24}$/),
      url: RECEIVER,
      events: ['ticket.created', 'deal.*'],
      description: 'CRM sync',
      enabled: true,
      disabled_reason: null,
      created_at: expect.any(String),
      updated_at: endpoint.created_at,
      secret: expect.stringMatching(SECRET),
    });
    expect(Buffer.from(endpoint.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    const { secret: firstSecret, ...shown } = endpoint;

    expect(await list()).toEqual([shown]);
    const got = await call('GET', `/api/webhooks/${endpoint.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ data: shown });

    const patched = await call('PATCH', `/api/webhooks/${endpoint.id}`, {
      url: 'http://localhost:4599/other',
      events: ['*'],
      description: null,
    });
    expect(patched.status).toBe(200);
    expect(patched.body.message).toBe('Webhook endpoint updated.');
    expect(patched.body.data).toMatchObject({
      url: 'http://localhost:4599/other',
      events: ['*'],
      description: null,
    });
    expect(patched.body.data.updated_at > endpoint.updated_at).toBe(true);
    expect((await call('GET', `/api/webhooks/${endpoint.id}`)).body.data).toEqual(patched.body.data);

    const before = Date.now();
    const rotated = await call('POST', `/api/webhooks/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const { secret, previous_secret_expires_at } = rotated.body.data;
    expect(secret).toMatch(SECRET);
    expect(secret).not.toBe(firstSecret);
    const expires = Date.parse(previous_secret_expires_at);
    expect(expires - before).toBeGreaterThanOrEqual(24 * 3600 * 1000);
    expect(expires - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000);
    // Both sign for the next 24 hours: the new one current, the old one until it expires.
    const stored = await getEndpoint(account.accountId, endpoint.id);
    expect(stored?.entity.secrets).toEqual([
      { secret, expiresAt: null },
      { secret: firstSecret, expiresAt: expires },
    ]);

    const deleted = await call('DELETE', `/api/webhooks/${endpoint.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ message: 'Webhook endpoint deleted.' });
    expect((await call('GET', `/api/webhooks/${endpoint.id}`)).status).toBe(404);
    expect((await call('DELETE', `/api/webhooks/${endpoint.id}`)).status).toBe(404);
    expect(await list()).toEqual([]);
  });

  it('shows the secret on create and rotate only, and never keeps it with an Idempotency-Key', async () => {
    const { account, call, list } = await setUp();
    const headers = { 'Idempotency-Key': 'webhook-create-1' };
    const created = await call('POST', '/api/webhooks', endpointBody(), headers);
    expect(created.body.data.secret).toMatch(SECRET);
    const { id } = created.body.data;
    const answers = [
      (await call('GET', '/api/webhooks')).body.data[0],
      (await call('GET', `/api/webhooks/${id}`)).body.data,
      (await call('PATCH', `/api/webhooks/${id}`, { description: 'Renamed' })).body.data,
    ];
    for (const answer of answers) expect(answer).not.toHaveProperty('secret');

    // The replay is the same endpoint, without the secret: it is stored nowhere but in the endpoint.
    const replay = await call('POST', '/api/webhooks', endpointBody(), headers);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data).toEqual({ ...created.body.data, secret: null });
    expect(await list()).toHaveLength(1);
    const rotateHeaders = { 'Idempotency-Key': 'webhook-rotate-1' };
    const rotated = await call('POST', `/api/webhooks/${id}/rotate-secret`, undefined, rotateHeaders);
    expect(rotated.body.data.secret).toMatch(SECRET);
    const rotateReplay = await call('POST', `/api/webhooks/${id}/rotate-secret`, undefined, rotateHeaders);
    expect(rotateReplay.body.data).toEqual({ ...rotated.body.data, secret: null });

    const kept = async (key: string) =>
      JSON.stringify(
        await getItem(
          idempotencyKeys.record(account.accountId, createHash('sha256').update(key).digest('hex')),
        ),
      );
    for (const key of ['webhook-create-1', 'webhook-rotate-1']) {
      const record = await kept(key);
      expect(record).toContain('"state":"done"');
      expect(record).not.toContain('whsec_');
    }
  });

  it('enabling clears disabled_reason; disabling keeps it null; a PATCH that changes nothing writes nothing', async () => {
    const { account, call } = await setUp();
    const { id } = (await call('POST', '/api/webhooks', endpointBody())).body.data;
    // As the dispatcher disables an endpoint that answered 410.
    await dynamo.send(
      new UpdateCommand({
        TableName: tableName(),
        Key: webhookKeys.endpoint(account.accountId, id),
        UpdateExpression: 'SET enabled = :false, disabledReason = :reason, failingSince = :since',
        ExpressionAttributeValues: {
          ':false': false,
          ':reason': 'The receiver answered 410 Gone.',
          ':since': 1,
        },
      }),
    );
    const disabled = (await call('GET', `/api/webhooks/${id}`)).body.data;
    expect(disabled).toMatchObject({ enabled: false, disabled_reason: 'The receiver answered 410 Gone.' });
    const enabled = await call('PATCH', `/api/webhooks/${id}`, { enabled: true });
    expect(enabled.body.data).toMatchObject({ enabled: true, disabled_reason: null });
    expect((await getEndpoint(account.accountId, id))?.entity.failingSince).toBeNull();

    const off = await call('PATCH', `/api/webhooks/${id}`, { enabled: false });
    expect(off.body.data).toMatchObject({ enabled: false, disabled_reason: null });
    const version = (await getEndpoint(account.accountId, id))?.version;
    const same = await call('PATCH', `/api/webhooks/${id}`, {
      enabled: false,
      events: ['ticket.created', 'deal.*'],
    });
    expect(same.status).toBe(200);
    expect(same.body.data).toEqual(off.body.data);
    expect((await getEndpoint(account.accountId, id))?.version).toBe(version);
  });

  it('takes the local receiver forms on the local stage, and event types given twice once', async () => {
    const { call } = await setUp();
    for (const url of ['http://127.0.0.1:4599/a', 'http://localhost:4599/b', 'http://localhost/c']) {
      const created = await call('POST', '/api/webhooks', { url, events: ['*'] });
      expect(created.status, url).toBe(201);
      expect(created.body.data).toMatchObject({ url, description: null });
    }
    const twice = await call('POST', '/api/webhooks', {
      url: RECEIVER,
      events: ['deal.*', 'ticket.created', 'deal.*'],
    });
    expect(twice.body.data.events).toEqual(['deal.*', 'ticket.created']);
  });

  it.each([
    ['http to a public host', { url: 'http://public.example/hook' }, 'url'],
    ['a private address', { url: 'https://10.0.0.1/hook' }, 'url'],
    ['the metadata address', { url: 'https://169.254.169.254/latest/meta-data/' }, 'url'],
    ['IPv6 loopback', { url: 'https://[::1]/hook' }, 'url'],
    ['a name that resolves to loopback', { url: 'https://localhost/hook' }, 'url'],
    ['loopback in decimal', { url: 'https://2130706433/hook' }, 'url'],
    ['IPv4-mapped loopback', { url: 'https://[::ffff:127.0.0.1]/hook' }, 'url'],
    ['not a URL', { url: 'not a url' }, 'url'],
    ['no url', { url: undefined }, 'url'],
    ['an unknown event type', { events: ['ticket.created', 'ticket.archived'] }, 'events.1'],
    ['no event types', { events: [] }, 'events'],
    ['events not a list', { events: 'ticket.created' }, 'events'],
    ['a description over 255 characters', { description: 'x'.repeat(256) }, 'description'],
  ])('refuses %s with a 422 on the field, storing nothing', async (_what, change, field) => {
    const { call, list } = await setUp();
    const refused = await call('POST', '/api/webhooks', endpointBody(change));
    expect(refused.status).toBe(422);
    expect(Object.keys(refused.body.errors)).toEqual([field]);
    expect(await list()).toEqual([]);
  });

  it('refuses a PATCH with a refused URL, an unknown event type or no field, changing nothing', async () => {
    const { call } = await setUp();
    const { secret: _, ...endpoint } = (await call('POST', '/api/webhooks', endpointBody())).body.data;
    const path = `/api/webhooks/${endpoint.id}`;
    for (const [body, field] of [
      [{ url: 'https://192.168.0.10/hook' }, 'url'],
      [{ url: 'https://localhost/hook', description: 'moved' }, 'url'],
      [{ events: ['*', 'lead.created'] }, 'events.1'],
      [{ enabled: 'yes' }, 'enabled'],
      [{}, 'body'],
    ] as const) {
      const refused = await call('PATCH', path, body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(refused.body.errors)).toEqual([field]);
    }
    expect((await call('GET', path)).body.data).toEqual(endpoint);
  });

  it(`refuses the ${MAX_ENDPOINTS + 1}st endpoint (422), and takes one again after a delete`, async () => {
    const { call, list } = await setUp();
    for (let i = 0; i < MAX_ENDPOINTS; i++) {
      expect((await call('POST', '/api/webhooks', endpointBody({ description: `#${i}` }))).status).toBe(201);
    }
    const refused = await call('POST', '/api/webhooks', endpointBody({ description: 'one too many' }));
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual({
      body: ['An account may have at most 20 webhook endpoints: delete one to add another.'],
    });
    const all = await list();
    expect(all.map((e) => (e as { description?: string }).description)).toEqual(
      Array.from({ length: MAX_ENDPOINTS }, (_, i) => `#${i}`),
    );
    expect((await call('DELETE', `/api/webhooks/${all[3]?.id}`)).status).toBe(200);
    expect((await call('POST', '/api/webhooks', endpointBody())).status).toBe(201);
    expect((await call('POST', '/api/webhooks', endpointBody())).status).toBe(422);
  });

  it(`lets exactly ${MAX_ENDPOINTS} of many concurrent creates through`, async () => {
    const { call, list } = await setUp();
    const answers = await Promise.all(
      Array.from({ length: MAX_ENDPOINTS + 6 }, () => call('POST', '/api/webhooks', endpointBody())),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX_ENDPOINTS);
    expect(statuses.filter((s) => s !== 201)).toEqual(Array(6).fill(422));
    expect(await list()).toHaveLength(MAX_ENDPOINTS);
  });

  it("keeps accounts apart: another account's endpoint is 404 on every route, and not listed", async () => {
    const owner = await setUp();
    const other = await setUp();
    const { id } = (await owner.call('POST', '/api/webhooks', endpointBody())).body.data;
    expect(await other.list()).toEqual([]);
    const attempts = [
      await other.call('GET', `/api/webhooks/${id}`),
      await other.call('PATCH', `/api/webhooks/${id}`, { description: 'mine now' }),
      await other.call('POST', `/api/webhooks/${id}/rotate-secret`),
      await other.call('GET', `/api/webhooks/${id}/deliveries`),
      await other.call('POST', `/api/webhooks/${id}/redeliver`, { since: '2026-01-01T00:00:00.000000Z' }),
      await other.call('DELETE', `/api/webhooks/${id}`),
    ];
    expect(attempts.map((a) => a.status)).toEqual([404, 404, 404, 404, 404, 404]);
    expect((await owner.call('GET', `/api/webhooks/${id}`)).body.data.description).toBe('CRM sync');
    for (const ref of ['we_0', 'nope', `${id}x`, id.toUpperCase()]) {
      expect((await owner.call('GET', `/api/webhooks/${encodeURIComponent(ref)}`)).status, ref).toBe(404);
    }
  });
});

describe('webhook management and the rate limit', () => {
  it("counts against the account's rate limit, as every call past the key does", async () => {
    const account = await createTestAccount({ rate_limit_per_minute: 2 });
    const call = (method: string, path: string, body?: unknown) =>
      gateway.call(method, path, { key: account.apiKey, ...(body !== undefined ? { body } : {}) });
    expect((await call('POST', '/api/webhooks', endpointBody())).status).toBe(201);
    expect((await call('GET', '/api/webhooks')).status).toBe(200);
    const refused = await call('POST', '/api/webhooks', endpointBody());
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});

describe('deliveries log and redelivery', () => {
  it('lists no attempts for a new endpoint, as a page', async () => {
    const { call } = await setUp();
    const { id } = (await call('POST', '/api/webhooks', endpointBody())).body.data;
    const page = await call('GET', `/api/webhooks/${id}/deliveries?per_page=5`);
    expect(page.status).toBe(200);
    expect(page.body.data).toEqual([]);
    expect(page.body.meta).toMatchObject({ total: 0, per_page: 5, current_page: 1, last_page: 1 });
    expect(page.body.links.first).toMatch(new RegExp(`/api/webhooks/${id}/deliveries\\?page=1&per_page=5$`));
    expect((await call('GET', `/api/webhooks/${id}/deliveries?per_page=500`)).status).toBe(422);
  });

  it('redelivers an event of the account by id, or the events since a time; refuses what names none', async () => {
    const { call } = await setUp();
    const { id } = (await call('POST', '/api/webhooks', endpointBody({ events: ['ticket.*'] }))).body.data;
    const since = new Date(Date.now() - 1000).toISOString().replace('Z', '000Z');
    const ticket = { subject: 'Hook me', description: 'd', requester_email: 'ann@client.test' };
    expect((await call('POST', '/api/tickets', ticket)).status).toBe(201);
    const events = (await call('GET', '/api/events?type=ticket.created')).body.data as { id: string }[];
    const eventId = events.at(-1)?.id;

    const one = await call('POST', `/api/webhooks/${id}/redeliver`, { event_id: eventId });
    expect(one.status).toBe(202);
    expect(one.body.count).toBe(1);
    const all = await call('POST', `/api/webhooks/${id}/redeliver`, { since });
    expect(all.status).toBe(202);
    expect(all.body).toEqual({ message: '1 event will be sent again.', count: 1 });

    const other = await setUp();
    const foreign = (
      await other.call('POST', '/api/tickets', ticket).then(() => other.call('GET', '/api/events'))
    ).body.data[0].id;
    for (const [body, field] of [
      [{ event_id: foreign }, 'event_id'],
      [{ event_id: 'evt_nope' }, 'event_id'],
      [{}, 'event_id'],
      [{ event_id: eventId, since }, 'event_id'],
      [{ since: 'yesterday' }, 'since'],
      [{ since: '2026-11-22 14:13:37' }, 'since'],
    ] as const) {
      const refused = await call('POST', `/api/webhooks/${id}/redeliver`, body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(refused.body.errors)).toEqual([field]);
    }

    await call('PATCH', `/api/webhooks/${id}`, { enabled: false });
    const disabled = await call('POST', `/api/webhooks/${id}/redeliver`, { event_id: eventId });
    expect(disabled.status).toBe(422);
    expect(Object.keys(disabled.body.errors)).toEqual(['body']);
  });
});
