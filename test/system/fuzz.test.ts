import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { routes } from '#functions/routes.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { checkAnswer as checkContract } from '#test/support/contract.ts';
import { useGateway } from '#test/support/http.ts';
import { sequencesOf } from '#test/support/sequences.ts';

/**
 * Random and malformed requests to every route (issue 9): never a 5xx; every answer is JSON of the documented
 * shape with an X-Request-Id; a refused request stores nothing (the account's counters and totals stay).
 * Bounded in runs and time so that it stays well under a minute.
 */
const gateway = useGateway();
const account = useTestAccount({ categories: [{ slug: 'billing', name: 'Billing' }] });

const FIELDS = [
  'subject',
  'description',
  'requester_email',
  'requester_name',
  'priority',
  'category_id',
  'category_slug',
  'channel',
  'custom_fields',
  'name',
  'amount',
  'currency',
  'pipeline_id',
  'stage_id',
  'expected_close_date',
  'contact_email',
  'contact_first_name',
  'contact_last_name',
  'contact_phone',
  '__proto__',
  'constructor',
];
const nasty = fc.oneof(
  fc.constantFrom(
    9007199254740992,
    1e21,
    1e125,
    1e-200,
    -0,
    1e308,
    0.1,
    '0x10',
    '1e3',
    '',
    ' ',
    'urgent',
    'billing',
    'a@b.co',
    'EUR',
    '2026-02-30',
    '2026-02-28',
    null,
    true,
    [],
    {},
    { __proto__: 1 },
    '\u0000',
    '💥'.repeat(300),
  ),
  fc.string({ maxLength: 300 }),
  fc.double(),
  fc.integer(),
  fc.jsonValue({ maxDepth: 2 }),
  fc.dictionary(
    fc.constantFrom('plan', 'seats', '__proto__', 'constructor', 'bad key', 'x'.repeat(65)),
    fc.jsonValue({ maxDepth: 1 }),
  ),
);
const jsonBody = fc
  .dictionary(fc.constantFrom(...FIELDS), nasty, { maxKeys: 10 })
  .map((o) => JSON.stringify(o));
const rawBody = fc.oneof(
  jsonBody,
  fc.string({ maxLength: 200 }),
  fc.constantFrom('[]', 'null', '1', '"x"', '{', '{"subject":', '\u0000', '{"a":1}{"b":2}'),
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/vnd.api+json',
  '',
);
const queryValue = fc.oneof(
  fc.constantFrom(
    '1',
    '0',
    '-1',
    '100',
    '101',
    '2147483648',
    '1e3',
    'open',
    'urgent',
    'done',
    'a@b.co',
    '',
    '%',
    '[]',
    '99999999999999999999',
  ),
  fc.string({ maxLength: 40 }),
);
const QUERY_KEYS = [
  'page',
  'per_page',
  'status',
  'priority',
  'assignee_id',
  'requester_email',
  'search',
  'custom_fields[plan]',
  'custom_fields[__proto__]',
  'custom_fields',
  'custom_fields[bad key]',
  'x',
];
const query = fc
  .array(fc.tuple(fc.constantFrom(...QUERY_KEYS), queryValue), { maxLength: 6 })
  .map((pairs) => pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'));
const paths = fc.oneof(
  fc.constantFrom(...routes.map((r) => r.path)),
  fc.constantFrom(
    '/api',
    '/api/',
    '/api/tickets/x',
    '/API/tickets',
    '/api/tickets%2F',
    '/api/deals/../tickets',
    '/',
  ),
  fc.string({ maxLength: 30 }).map((s) => `/api/${encodeURIComponent(s)}`),
);
const method = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD');
const headers = fc.record(
  {
    'X-Request-Id': fc.oneof(fc.string({ maxLength: 140 }), fc.constantFrom('ok-1', 'a'.repeat(129))),
    'Idempotency-Key': fc.oneof(fc.string({ maxLength: 260 }), fc.constantFrom('"quoted"', '""', 'k')),
    Authorization: fc.constantFrom('Bearer nope', 'bearer', 'Basic x', ''),
  },
  { requiredKeys: [] },
);

/** Header values fetch can send (it refuses control characters and non-Latin-1). */
const sendable = (h: Record<string, string>) =>
  Object.fromEntries(Object.entries(h).filter(([, v]) => /^[\x20-\x7E]*$/.test(v)));

/** No 5xx, a sane request id, and an answer the OpenAPI document describes (HEAD answers have no body). */
function checkAnswer(
  request: { method: string; path: string },
  status: number,
  headers: Headers,
  text: string,
  label: string,
) {
  expect(status, label).toBeLessThan(500);
  expect(headers.get('x-request-id'), label).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  if (request.method === 'HEAD') return;
  expect(() => checkContract({ ...request, status, headers, text }), label).not.toThrow();
}

async function totals() {
  const list = await gateway.call('GET', '/api/tickets', { key: account.apiKey });
  return { tickets: list.body.meta.total, sequences: await sequencesOf(account.accountId) };
}

const RUN = { numRuns: 120, interruptAfterTimeLimit: 12_000 };

describe('fuzzing every route over HTTP', () => {
  it('writes: random and malformed bodies never get a 5xx, and a refused one stores nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/tickets', '/api/deals'),
        rawBody,
        contentType,
        headers,
        async (path, body, type, extra) => {
          const before = await totals();
          const response = await fetch(`${gateway.baseUrl}${path}`, {
            method: 'POST',
            headers: {
              ...sendable(extra),
              Authorization: `Bearer ${account.apiKey}`,
              ...(type ? { 'Content-Type': type } : {}),
            },
            body,
          });
          const text = await response.text();
          const label = `POST ${path} ${body.slice(0, 200)} ${JSON.stringify(extra)}`;
          checkAnswer({ method: 'POST', path }, response.status, response.headers, text, label);
          if (response.status >= 400) expect(await totals(), label).toEqual(before);
        },
      ),
      RUN,
    );
  });

  it('reads: random query strings never get a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(query, headers, async (q, extra) => {
        const response = await fetch(`${gateway.baseUrl}/api/tickets?${q}`, {
          headers: { ...sendable(extra), Authorization: `Bearer ${account.apiKey}` },
        });
        const path = `/api/tickets?${q}`;
        checkAnswer({ method: 'GET', path }, response.status, response.headers, await response.text(), path);
      }),
      RUN,
    );
  });

  it('any method on any path, with or without a key, never gets a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(method, paths, headers, fc.boolean(), async (m, path, extra, withKey) => {
        const response = await fetch(`${gateway.baseUrl}${path}`, {
          method: m,
          headers: { ...sendable(extra), ...(withKey ? { Authorization: `Bearer ${account.apiKey}` } : {}) },
        });
        const text = await response.text();
        checkAnswer({ method: m, path }, response.status, response.headers, text, `${m} ${path}`);
      }),
      RUN,
    );
  });
});
