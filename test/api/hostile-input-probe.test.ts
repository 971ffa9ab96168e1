import { describe, expect, it } from 'vitest';
import { handler as listDeals } from '#functions/deals-list.ts';
import { handler as listTickets } from '#functions/tickets-list.ts';
import { MAX_JSON_DEPTH } from '#lib/http/json-limits.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { useGateway } from '#test/support/http.ts';
import { sequencesOf } from '#test/support/sequences.ts';

/**
 * The five defects of issue 25's adversarial probe, each as it was found: input that was answered with a 5xx or
 * mishandled. The fuzz test (test/system/sweeps/fuzz.test.ts) sweeps the same inputs over every route.
 */
const gateway = useGateway();
const account = useTestAccount();

const ticket = { subject: 'Probe', description: 'd', requester_email: 'probe@client.test' };
const nested = (depth: number, leaf = '5') => `${'['.repeat(depth)}${leaf}${']'.repeat(depth)}`;

describe('deep nesting', () => {
  it(`a body nested ${MAX_JSON_DEPTH + 1} levels deep is a 400 that takes no number, with or without a key`, async () => {
    // The body object is level 1, the arrays in x the levels below it.
    const body = `{"subject":"s","description":"d","requester_email":"a@b.test","x":${nested(MAX_JSON_DEPTH)}}`;
    const before = await sequencesOf(account.accountId);
    for (const headers of [{}, { 'Idempotency-Key': 'deep-1' }] as Record<string, string>[]) {
      const response = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body, headers });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        message: `The request body must not nest deeper than ${MAX_JSON_DEPTH} levels.`,
      });
    }
    expect(await sequencesOf(account.accountId)).toEqual(before);
  });

  it('5,000 levels with an Idempotency-Key is a 400, not a 500 (the probe)', async () => {
    const body = `{"subject":"s","description":"d","requester_email":"a@b.test","x":${nested(5000)}}`;
    const response = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body,
      headers: { 'Idempotency-Key': 'deep-2' },
    });
    expect(response.status).toBe(400);
  });

  it(`a body exactly ${MAX_JSON_DEPTH} levels deep is taken (unknown fields are ignored)`, async () => {
    const body = JSON.stringify({ ...ticket, x: JSON.parse(nested(MAX_JSON_DEPTH - 1)) });
    const response = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body,
      headers: { 'Idempotency-Key': 'deep-3' },
    });
    expect(response.status).toBe(201);
  });
});

describe('non-finite numbers', () => {
  const deal = '"name":"D","contact_email":"inf@client.test","contact_first_name":"D"';

  it.each([
    ['1e400', 'The amount field must not be greater than 99999999999.9999.'],
    ['-1e400', 'The amount field must be at least 0.'],
    ['"1e400"', 'The amount field must not be greater than 99999999999.9999.'],
  ])('"amount": %s on POST /api/deals is a 422 on amount', async (amount, message) => {
    const before = await sequencesOf(account.accountId);
    const response = await gateway.call('POST', '/api/deals', {
      key: account.apiKey,
      body: `{${deal},"amount":${amount}}`,
    });
    expect(response.status).toBe(422);
    expect(response.body.errors).toEqual({ amount: [message] });
    expect(await sequencesOf(account.accountId)).toEqual(before);
  });

  it('"amount": 1e400 on PATCH /api/deals/{deal} is a 422 on amount', async () => {
    const created = await gateway.call('POST', '/api/deals', {
      key: account.apiKey,
      body: `{${deal},"amount":10}`,
    });
    expect(created.status).toBe(201);
    const response = await gateway.call('PATCH', `/api/deals/${created.body.data.uuid}`, {
      key: account.apiKey,
      body: '{"amount":1e400}',
    });
    expect(response.status).toBe(422);
    expect(response.body.errors).toEqual({
      amount: ['The amount field must not be greater than 99999999999.9999.'],
    });
  });
});

describe('names of Object.prototype members', () => {
  const names = ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty'];

  it.each(names)('the local gateway serves ?%s=1 and a header named so', async (name) => {
    const query = await gateway.call('GET', `/api/openapi.json?${name}=1`);
    expect(query.status).toBe(200);
    const header = await gateway.call('GET', '/docs', { headers: { [name]: 'x' } });
    expect(header.status).toBe(200);
  });

  it.each([
    ['tickets', listTickets, '/api/tickets'],
    ['deals', listDeals, '/api/deals'],
  ])('the %s list ignores them, and its links do not repeat them', async (_name, list, path) => {
    const query = Object.fromEntries(names.filter((n) => n !== '__proto__').map((n) => [n, 'x']));
    const response = await list(
      proxyEvent({ path, caller: callerOf(account), query: { ...query, per_page: '5' } }),
      lambdaContext,
    );
    expect(response.statusCode).toBe(200);
    const { links } = JSON.parse(response.body);
    expect(links.first).toBe(`https://api.test/test${path}?page=1&per_page=5`);
  });
});

describe('the declared charset', () => {
  async function send(contentType: string, body: Uint8Array) {
    const response = await fetch(`${gateway.baseUrl}/api/tickets`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${account.apiKey}`, 'Content-Type': contentType },
      body,
    });
    return {
      status: response.status,
      body: (await response.json()) as { message?: string; ticket?: { subject: string } },
    };
  }
  const text = JSON.stringify({ ...ticket, subject: 'café' });

  it.each([
    ['latin1', Buffer.from(text, 'latin1')],
    ['utf-16', Buffer.from(text, 'utf16le')],
    ['"ISO-8859-1"', Buffer.from(text, 'latin1')],
  ])('charset=%s is a 415 naming it', async (charset, bytes) => {
    const before = await sequencesOf(account.accountId);
    const response = await send(`application/json; charset=${charset}`, bytes);
    expect(response.status).toBe(415);
    const name = charset.replaceAll('"', '');
    expect(response.body).toEqual({
      message: `The request body must be UTF-8: charset "${name}" is not supported.`,
    });
    expect(await sequencesOf(account.accountId)).toEqual(before);
  });

  it.each(['utf-8', 'UTF-8', '"utf-8"', 'utf8'])('charset=%s is read as UTF-8', async (charset) => {
    const response = await send(`application/json; charset=${charset}`, Buffer.from(text, 'utf8'));
    expect(response.status).toBe(201);
    expect(response.body.ticket?.subject).toBe('café');
  });
});

describe('answers that carry a secret', () => {
  it('webhook create and rotate-secret say Cache-Control: no-store', async () => {
    const created = await gateway.call('POST', '/api/webhooks', {
      key: account.apiKey,
      body: { url: 'http://127.0.0.1:4599/hooks', events: ['ticket.*'] },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const rotated = await gateway.call('POST', `/api/webhooks/${created.body.data.id}/rotate-secret`, {
      key: account.apiKey,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.headers.get('cache-control')).toBe('no-store');
  });
});
