import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { type RouteDefinition, routes } from '#functions/routes.ts';
import { MAX_JSON_DEPTH } from '#lib/http/json-limits.ts';
import { useTestAccount } from '#test/support/accounts.ts';
import { checkAnswer as checkContract } from '#test/support/contract.ts';
import {
  ACCEPTED_CONTENT_TYPES,
  type BodyFields,
  baseEntries,
  bodyFieldsOf,
  everyRoute,
  makeThings,
  NON_FINITE,
  nestedText,
  objectText,
  PROTOTYPE_NAMES,
  pathOf,
  REFUSED_CONTENT_TYPES,
  type Things,
} from '#test/support/hostile.ts';
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
    /**
     * The totals a refused request was checked against after it: the next request's before. Nothing else writes to
     * the account between two requests (the runs are sequential, a refused one stores nothing), so reading them
     * again would answer the same; after a request that stored something (or a failed check) they are read afresh.
     */
    let known: Awaited<ReturnType<typeof totals>> | undefined;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/tickets', '/api/deals'),
        rawBody,
        contentType,
        headers,
        async (path, body, type, extra) => {
          const before = known ?? (await totals());
          known = undefined;
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
          if (response.status >= 400) {
            const after = await totals();
            expect(after, label).toEqual(before);
            known = after;
          }
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

/**
 * Issue 25's hostile input over every route of the route table: names of Object.prototype members as query
 * parameters, header names and body keys at every level; nesting around the depth bound; non-finite numbers in
 * every numeric field (test/support/hostile.ts reads them from the OpenAPI document); every charset the body
 * check takes. Sweeps first (every case once), then random mixes of them. Never a 5xx.
 */
describe('hostile input over every route', () => {
  const owner = useTestAccount();
  let things: Things;
  beforeAll(async () => {
    things = await makeThings(gateway, owner.apiKey);
  });
  let keys = 0;

  async function send(
    route: RouteDefinition,
    options: { query?: string; headers?: Record<string, string>; body?: string; contentType?: string } = {},
  ) {
    const path = `${pathOf(route, things)}${options.query ? `?${options.query}` : ''}`;
    const write = route.method !== 'GET';
    const body = write ? (options.body ?? objectText(baseEntries(route))) : undefined;
    const response = await fetch(`${gateway.baseUrl}${path}`, {
      method: route.method,
      headers: {
        ...options.headers,
        ...(route.auth ? { Authorization: `Bearer ${owner.apiKey}` } : {}),
        // A fresh key on every write: the claim, and so the body's canonical form, is on the path each time.
        ...(write && route.auth ? { 'Idempotency-Key': `hostile-${process.pid}-${++keys}` } : {}),
        ...(body !== undefined ? { 'Content-Type': options.contentType ?? 'application/json' } : {}),
      },
      body,
    });
    const text = await response.text();
    const label = `${route.method} ${path} ${JSON.stringify(options.headers ?? {})} ${(body ?? '').slice(0, 300)}`;
    checkAnswer({ method: route.method, path }, response.status, response.headers, text, label);
    return { status: response.status, text };
  }
  const statusOf = async (...args: Parameters<typeof send>) => (await send(...args)).status;

  /** Prototype names at every level of a route's body: top level, inside its object fields, nested. */
  const protoBody = (route: RouteDefinition, names: string[], fields: BodyFields) =>
    objectText([
      ...baseEntries(route),
      ...names.map((name): [string, string] => [name, '"x"']),
      ...fields.objects.map((field): [string, string] => [
        field,
        objectText(names.map((name) => [name, '1'])),
      ]),
      ...names.map((name): [string, string] => [`nested_${name}`, nestedText(6, name)]),
    ]);

  it('prototype names as query parameters, headers and body keys: no route answers 5xx', async () => {
    const queryOf = (names: string[]) =>
      names
        .flatMap((name) => [name, `custom_fields[${name}]`, `${name}[${name}]`])
        .map((k) => `${encodeURIComponent(k)}=1`)
        .join('&');
    // A custom field named like the reserved three is a 422 that would hide what the other names do there: those
    // go one a request where the body has an object field; unknown names are ignored, so the rest go together.
    const reserved = ['__proto__', 'constructor', 'prototype'];
    for (const route of everyRoute) {
      const fields = bodyFieldsOf(route);
      const groups =
        fields && fields.objects.length > 0
          ? [...reserved.map((name) => [name]), PROTOTYPE_NAMES.filter((name) => !reserved.includes(name))]
          : [PROTOTYPE_NAMES];
      for (const names of groups) {
        await send(route, {
          query: queryOf(names),
          headers: Object.fromEntries(names.map((name) => [name, 'x'])),
          ...(fields ? { body: protoBody(route, names, fields) } : {}),
        });
      }
    }
  });

  it('non-finite numbers in every numeric field are a 422 on that field', async () => {
    let swept = 0;
    for (const route of everyRoute) {
      const fields = bodyFieldsOf(route);
      if (!fields) continue;
      const places: [string, (text: string) => [string, string]][] = [
        ...fields.numbers.map((f): [string, (t: string) => [string, string]] => [f, (t) => [f, t]]),
        ...fields.objects.map((f): [string, (t: string) => [string, string]] => [
          `${f}.n`,
          (t) => [f, objectText([['n', t]])],
        ]),
      ];
      for (const [field, place] of places) {
        // A custom field may be a string: there only a JSON number is non-finite.
        for (const number of field.includes('.')
          ? NON_FINITE.filter((n) => !n.startsWith('"'))
          : NON_FINITE) {
          const answer = await send(route, { body: objectText([...baseEntries(route), place(number)]) });
          const label = `${route.name} ${field}: ${number.slice(0, 10)}`;
          expect(answer.status, label).toBe(422);
          expect(Object.keys(JSON.parse(answer.text).errors), label).toContain(field);
          swept++;
        }
      }
    }
    // 19 number fields (createMessage's agent_id, a key rotation's expire_old_in_seconds, an agent's capacity,
    // the organization_id of a ticket's and a contact's PATCH, a rule's position in its create and PATCH and a
    // backtest's limit among them) and 2 custom_fields on the routes that have them (docs/openapi.json).
    expect(swept).toBe(19 * NON_FINITE.length + 2 * 2);
  });

  it(`nesting: ${MAX_JSON_DEPTH} levels are taken, ${MAX_JSON_DEPTH + 1} and 5,000 are a 400 on every body`, async () => {
    for (const route of everyRoute.filter((r) => bodyFieldsOf(r))) {
      // The body is level 1, so its field holds one level fewer than the total.
      const at = (levels: number) => objectText([...baseEntries(route), ['x', nestedText(levels - 1, 'x')]]);
      expect(await statusOf(route, { body: at(MAX_JSON_DEPTH) }), route.name).not.toBe(400);
      expect(await statusOf(route, { body: at(MAX_JSON_DEPTH + 1) }), route.name).toBe(400);
      expect(await statusOf(route, { body: at(5000) }), route.name).toBe(400);
    }
  });

  it('every charset the body check takes reaches the route; the others are a 415', async () => {
    for (const route of everyRoute.filter((r) => bodyFieldsOf(r))) {
      for (const contentType of ACCEPTED_CONTENT_TYPES) {
        expect(await statusOf(route, { contentType }), `${route.name} ${contentType}`).not.toBe(415);
      }
      for (const contentType of REFUSED_CONTENT_TYPES) {
        expect(await statusOf(route, { contentType }), `${route.name} ${contentType}`).toBe(415);
      }
    }
  });

  it('random mixes of all of them: never a 5xx', async () => {
    const name = fc.constantFrom(...PROTOTYPE_NAMES, 'page', 'per_page', 'custom_fields[plan]', 'x');
    const value = fc.oneof(
      fc.constantFrom(...NON_FINITE, '1', '"x"', 'null', '{}', '[]'),
      fc.jsonValue().map((v) => JSON.stringify(v)),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...everyRoute),
        fc.array(fc.tuple(name, fc.string({ maxLength: 20 })), { maxLength: 4 }),
        fc.uniqueArray(fc.constantFrom(...PROTOTYPE_NAMES), { maxLength: 3 }),
        fc.array(fc.tuple(name, value), { maxLength: 4 }),
        fc.constantFrom(MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, 3000),
        fc.constantFrom(...ACCEPTED_CONTENT_TYPES, ...REFUSED_CONTENT_TYPES),
        async (route, query, headerNames, entries, depth, contentType) => {
          const fields = bodyFieldsOf(route);
          const numbers = (fields?.numbers ?? []).map((f): [string, string] => [f, '1e400']);
          await send(route, {
            query: query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&'),
            headers: Object.fromEntries(headerNames.map((h) => [h, 'x'])),
            body: objectText([
              ...baseEntries(route),
              ...entries,
              ...(entries.length % 2 === 0 ? numbers : []),
              ['deep', nestedText(depth, headerNames[0] ?? 'x')],
            ]),
            contentType,
          });
        },
      ),
      { numRuns: 150, interruptAfterTimeLimit: 15_000 },
    );
  });
});
