import { describe, expect, it } from 'vitest';
import { MAX_AMOUNT_STRING_LENGTH } from '#lib/deals/schemas.ts';
import { MAX_CUSTOM_FIELD_STRING } from '#lib/tickets/schemas.ts';
import { MAX_IF_MATCH_LENGTH } from '#lib/versioned-update.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The request-side limits the OWASP ruleset asks for (API4) on the three inputs that had none: each enforced
 * with a 422 on its field at the length the OpenAPI document states, and a request over it changes nothing.
 */
describe('request-side length limits', () => {
  const account = useTestAccount();
  const gateway = useGateway();
  const deal = {
    name: 'Limit',
    contact_email: 'limit@client.test',
    contact_first_name: 'Lim',
    contact_last_name: 'It',
  };

  it(`an amount sent as a decimal string: at most ${MAX_AMOUNT_STRING_LENGTH} characters`, async () => {
    const atLimit = `${'0'.repeat(MAX_AMOUNT_STRING_LENGTH - 4)}12.5`;
    const created = await gateway.call('POST', '/api/deals', {
      key: account.apiKey,
      body: { ...deal, amount: atLimit },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.amount).toBe(12.5);
    const before = await gateway.call('GET', '/api/deals', { key: account.apiKey });

    const over = `0${atLimit}`;
    for (const [method, path] of [
      ['POST', '/api/deals'],
      ['PATCH', `/api/deals/${created.body.data.uuid}`],
    ] as const) {
      const body = method === 'POST' ? { ...deal, amount: over } : { amount: over };
      const refused = await gateway.call(method, path, { key: account.apiKey, body });
      expect(refused.status).toBe(422);
      expect(refused.body.errors).toEqual({
        amount: [`The amount field must not be greater than ${MAX_AMOUNT_STRING_LENGTH} characters.`],
      });
    }
    const after = await gateway.call('GET', '/api/deals', { key: account.apiKey });
    expect(after.body).toEqual(before.body);
  });

  it(`a custom_fields[<key>] filter value: at most ${MAX_CUSTOM_FIELD_STRING} characters`, async () => {
    const atLimit = 'x'.repeat(MAX_CUSTOM_FIELD_STRING);
    const ok = await gateway.call('GET', `/api/tickets?custom_fields[plan]=${atLimit}`, {
      key: account.apiKey,
    });
    expect(ok.status).toBe(200);
    const refused = await gateway.call('GET', `/api/tickets?custom_fields[plan]=${atLimit}x`, {
      key: account.apiKey,
    });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual({
      'custom_fields.plan': [
        `The custom fields.plan field must not be greater than ${MAX_CUSTOM_FIELD_STRING} characters.`,
      ],
    });
  });

  it(`an If-Match list: at most ${MAX_IF_MATCH_LENGTH} characters, refused before anything is read`, async () => {
    const created = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { subject: 'Limits', description: 'd', requester_email: 'r@client.test', requester_name: 'R' },
    });
    expect(created.status).toBe(201);
    const path = `/api/tickets/${created.body.ticket.uuid}`;
    const read = await gateway.call('GET', path, { key: account.apiKey });
    const etag = read.headers.get('etag') ?? '';
    // A list of stale ETags ending with the current one, padded to exactly the limit with spaces after commas.
    const stale = Array.from({ length: 60 }, (_, i) => `"${1000 + i}"`).join(',');
    const list = (pad: number) => `${stale},${' '.repeat(pad)}${etag}`;
    const fits = MAX_IF_MATCH_LENGTH - list(0).length;
    expect(list(fits).length).toBe(MAX_IF_MATCH_LENGTH);

    const over = await gateway.call('PATCH', path, {
      key: account.apiKey,
      body: { priority: 'high' },
      headers: { 'If-Match': list(fits + 1) },
    });
    expect(over.status).toBe(422);
    expect(over.body.errors).toEqual({
      if_match: [`The If-Match header must not be greater than ${MAX_IF_MATCH_LENGTH} characters.`],
    });
    expect((await gateway.call('GET', path, { key: account.apiKey })).body).toEqual(read.body);

    const atLimit = await gateway.call('PATCH', path, {
      key: account.apiKey,
      body: { priority: 'high' },
      headers: { 'If-Match': list(fits) },
    });
    expect(atLimit.status).toBe(200);
  });
});
