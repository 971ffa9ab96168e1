import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { sequencesOf } from '#test/support/sequences.ts';

/** Each input an adversarial tester found answering 500, an empty body or the wrong route (issue 9). */
const gateway = useGateway();
const account = useTestAccount();

const ticket = (extra: Record<string, unknown>) => ({
  subject: 'Hostile',
  description: 'd',
  requester_email: 'h@client.test',
  ...extra,
});

/** Sends a request and checks it was refused with 422 on `field`, leaving the account's counters alone. */
async function refused(path: string, body: string | Record<string, unknown>, field: string) {
  const before = await sequencesOf(account.accountId);
  const response = await gateway.call('POST', path, { key: account.apiKey, body });
  expect(response.status, JSON.stringify(body)).toBe(422);
  expect(Object.keys(response.body.errors)).toEqual([field]);
  expect(await sequencesOf(account.accountId)).toEqual(before);
  return response.body.errors[field][0] as string;
}

describe('numbers the store cannot keep exactly are a 422 on their field', () => {
  it.each(['9007199254740992', '1e21', '1e125', '-1e300'])('custom field %s', async (number) => {
    const body = `{"subject":"N","description":"d","requester_email":"n@c.test","custom_fields":{"seats":${number}}}`;
    expect(await refused('/api/tickets', body, 'custom_fields.seats')).toBe(
      'The custom fields.seats field must be between -9007199254740991 and 9007199254740991.',
    );
  });

  it('custom field 1e-200', async () => {
    const body =
      '{"subject":"N","description":"d","requester_email":"n@c.test","custom_fields":{"tiny":1e-200}}';
    expect(await refused('/api/tickets', body, 'custom_fields.tiny')).toBe(
      'The custom fields.tiny field must be 0 or at least 1e-130 in magnitude.',
    );
  });

  it('keeps the largest exact integer and small decimals as sent', async () => {
    const response = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: ticket({ custom_fields: { big: 9007199254740991, small: 1e-100, half: 0.5 } }),
    });
    expect(response.status).toBe(201);
    expect(response.body.ticket.custom_fields).toEqual({ big: 9007199254740991, small: 1e-100, half: 0.5 });
  });

  it.each(['18446744073709552000', '1e308', '1e-200'])('deal amount %s', async (amount) => {
    const body = `{"name":"D","contact_email":"d@c.test","contact_first_name":"D","amount":${amount}}`;
    await refused('/api/deals', body, 'amount');
  });

  it.each(['0x10', '0b11', '0o17', 'Infinity', '1_000'])(
    'deal amount "%s" is not numeric',
    async (amount) => {
      const body = { name: 'D', contact_email: 'd@c.test', contact_first_name: 'D', amount };
      expect(await refused('/api/deals', body, 'amount')).toBe('The amount field must be a number.');
    },
  );

  it.each(['12', '12.50', '1e3', ' 7 '])('deal amount "%s" is numeric', async (amount) => {
    const response = await gateway.call('POST', '/api/deals', {
      key: account.apiKey,
      body: { name: 'D', contact_email: 'numeric@c.test', contact_first_name: 'D', amount },
    });
    expect(response.status).toBe(201);
    expect(response.body.data.amount).toBe(Number(amount));
  });
});

describe('object keys from JavaScript machinery', () => {
  it.each(['__proto__', 'constructor', 'prototype'])(
    'custom field key %s is refused, not dropped',
    async (k) => {
      const body = `{"subject":"P","description":"d","requester_email":"p@c.test","custom_fields":{"${k}":"x","ok":1}}`;
      expect(await refused('/api/tickets', body, `custom_fields.${k}`)).toBe(
        `The custom fields.${k} key is reserved.`,
      );
    },
  );
});

describe('pages beyond any result', () => {
  it.each(['143165577', '9007199254740991'])('page=%s with per_page=15 is an empty page', async (page) => {
    const response = await gateway.call('GET', `/api/tickets?page=${page}`, { key: account.apiKey });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual([]);
    expect(response.body.meta).toMatchObject({ current_page: Number(page), from: null, to: null });
  });

  it('a page number past the exact integers is a 422', async () => {
    const response = await gateway.call('GET', '/api/tickets?page=99999999999999999999', {
      key: account.apiKey,
    });
    expect(response.status).toBe(422);
    expect(response.body.errors).toEqual({
      page: ['The page field must not be greater than 9007199254740991.'],
    });
  });
});

describe('the local gateway', () => {
  it('echoes a sane client X-Request-Id on its own answers too (401, 404, 405, 413)', async () => {
    const headers = { 'X-Request-Id': 'trace-42' };
    const answers = [
      await gateway.call('GET', '/api/tickets', { headers }),
      await gateway.call('GET', '/api/nope', { headers }),
      await gateway.call('DELETE', '/api/tickets', { headers }),
      await gateway.call('POST', '/api/tickets', { headers, body: 'x'.repeat(10 * 1024 * 1024 + 1) }),
    ];
    expect(answers.map((a) => a.status)).toEqual([401, 404, 405, 413]);
    for (const answer of answers) expect(answer.headers.get('x-request-id')).toBe('trace-42');
    const insane = await gateway.call('GET', '/api/nope', { headers: { 'X-Request-Id': 'a b<script>' } });
    expect(insane.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('builds links from its own base URL, never from Host or X-Forwarded-Proto', async () => {
    const response = await gateway.call('GET', '/api/tickets', {
      key: account.apiKey,
      headers: { Host: 'evil.example', 'X-Forwarded-Proto': 'javascript' },
    });
    expect(response.status).toBe(200);
    expect(response.body.meta.path).toBe(`${gateway.baseUrl}/api/tickets`);
    expect(response.body.links.first).toBe(`${gateway.baseUrl}/api/tickets?page=1`);
  });

  it.each(['//evil.example/api/pipelines', '/api/x/../pipelines', '/api/tickets///', '/api//tickets'])(
    'does not serve %s as a route',
    async (path) => {
      const response = await raw(
        `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${account.apiKey}\r\n\r\n`,
      );
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: 'Not found.' });
    },
  );

  it('serves a path with one trailing slash, as API Gateway does', async () => {
    const response = await gateway.call('GET', '/api/pipelines/', { key: account.apiKey });
    expect(response.status).toBe(200);
  });

  it.each([
    ['a raw space in the URL', 'GET /api/pi pelines HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['a lowercase method', 'get /api/pipelines HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    [
      'Transfer-Encoding with Content-Length',
      'POST /api/tickets HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
    ],
    ['a URL over 16 KB', `GET /api/tickets?q=${'a'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
    [
      '2,100 headers',
      `GET /api/pipelines HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 2100 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`,
      431,
    ],
  ])('answers %s with JSON and a request id', async (_name, request, status) => {
    const response = await raw(request);
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toBe('application/json');
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(typeof response.body?.message).toBe('string');
  });
});

/** One request over a raw socket, so that nothing tidies it up on the way. */
function raw(
  request: string,
): Promise<{ status: number; headers: Record<string, string>; body: { message?: string } | undefined }> {
  const { port, hostname } = new URL(gateway.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(request));
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk;
    });
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', ...rest] = data.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const at = line.indexOf(':');
        headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
      }
      let text = rest.join('\r\n\r\n');
      if (headers['transfer-encoding'] === 'chunked')
        text = text.replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, '');
      resolve({
        status: Number(statusLine.split(' ')[1]),
        headers,
        body: text ? JSON.parse(text) : undefined,
      });
    });
  });
}
