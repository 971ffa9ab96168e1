import { beforeAll, describe, expect, it } from 'vitest';
import { createTestAccount, useTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

const gateway = useGateway();

const base = { description: 'd' };

describe('GET /api/tickets pagination', () => {
  const account = useTestAccount();
  beforeAll(async () => {
    for (let i = 1; i <= 37; i++) {
      await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { ...base, subject: `Ticket ${i}`, requester_email: `r${i % 3}@example.com` },
      });
    }
  });

  it('pages 37 tickets by 15, newest first, with exact meta and links', async () => {
    const pages = await Promise.all(
      [1, 2, 3].map((p) => gateway.call('GET', `/api/tickets?page=${p}`, { key: account.apiKey })),
    );
    const url = `${gateway.baseUrl}/api/tickets`;
    expect(pages.map((p) => p.body.data.length)).toEqual([15, 15, 7]);
    expect(pages[0]?.body.data[0].reference).toBe('TKT-000037');
    expect(pages[2]?.body.data[6].reference).toBe('TKT-000001');
    const references = pages.flatMap((p) => p.body.data.map((t: { reference: string }) => t.reference));
    expect(new Set(references).size).toBe(37);
    expect(pages[0]?.body.meta).toEqual({
      current_page: 1,
      from: 1,
      last_page: 3,
      path: url,
      per_page: 15,
      to: 15,
      total: 37,
    });
    expect(pages[2]?.body.meta).toMatchObject({ current_page: 3, from: 31, to: 37 });
    expect(pages[0]?.body.links).toEqual({
      first: `${url}?page=1`,
      last: `${url}?page=3`,
      prev: null,
      next: `${url}?page=2`,
    });
    expect(pages[2]?.body.links).toMatchObject({ prev: `${url}?page=2`, next: null });
  });

  it('answers a page past the last with empty data and null from/to', async () => {
    const response = await gateway.call('GET', '/api/tickets?page=4', { key: account.apiKey });
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual([]);
    expect(response.body.meta).toMatchObject({
      current_page: 4,
      from: null,
      to: null,
      total: 37,
      last_page: 3,
    });
  });

  it('shows list items with the reduced requester and no parent_uuid', async () => {
    const response = await gateway.call('GET', '/api/tickets?per_page=1', { key: account.apiKey });
    const [item] = response.body.data;
    expect(Object.keys(item)).toEqual([
      'uuid',
      'reference',
      'subject',
      'description',
      'status',
      'priority',
      'category',
      'channel',
      'imported_from',
      'requester',
      'assignee',
      'team',
      'organization',
      'custom_fields',
      'tags',
      'due_at',
      'created_at',
      'updated_at',
      'resolved_at',
      'closed_at',
      'status_changed_at',
      'last_message_at',
      'waiting_since',
      'sla',
    ]);
    expect(item.requester).toEqual({ name: null, email: 'r1@example.com' });
    // decisions.md, "Conversations": list items carry the conversation's fields too.
    expect(item.last_message_at).toBe(item.created_at);
    expect(item.waiting_since).toBe(item.created_at);
  });

  it('keeps filters in the links', async () => {
    const response = await gateway.call(
      'GET',
      '/api/tickets?requester_email=r1@example.com&per_page=5&custom_fields[plan]=gold',
      { key: account.apiKey },
    );
    expect(response.body.links.first).toBe(
      `${gateway.baseUrl}/api/tickets?page=1&requester_email=r1%40example.com&per_page=5&custom_fields[plan]=gold`,
    );
  });

  it.each([
    ['page=0', 'page'],
    ['page=abc', 'page'],
    ['per_page=0', 'per_page'],
    ['per_page=101', 'per_page'],
    ['status=done', 'status'],
    ['priority=asap', 'priority'],
    ['assignee_id=abc', 'assignee_id'],
    ['status=open&status=closed', 'status'],
    ['custom_fields[bad key]=1', 'custom_fields.bad key'],
  ])('answers 422 for %s on %s', async (query, field) => {
    const response = await gateway.call('GET', `/api/tickets?${query}`, { key: account.apiKey });
    expect(response.status).toBe(422);
    expect(Object.keys(response.body.errors)).toEqual([field]);
  });

  it('ignores unknown query parameters', async () => {
    const response = await gateway.call('GET', '/api/tickets?colour=blue', { key: account.apiKey });
    expect(response.status).toBe(200);
    expect(response.body.meta.total).toBe(37);
    expect(response.body.links.first).toBe(`${gateway.baseUrl}/api/tickets?page=1`);
  });
});

describe('GET /api/tickets filters and search', () => {
  const account = useTestAccount({
    auto_assignment: { enabled: true, method: 'round_robin' },
    agents: [
      { email: 'a1@desk.test', name: 'A1' },
      { email: 'a2@desk.test', name: 'A2' },
    ],
  });
  const refs: Record<string, string> = {};
  beforeAll(async () => {
    const tickets: [string, Record<string, unknown>][] = [
      [
        'invoice',
        {
          subject: 'Invoice missing for March',
          requester_email: 'ann@example.com',
          priority: 'high',
          custom_fields: { plan: 'gold', seats: 3 },
        },
      ],
      [
        'login',
        {
          subject: 'Cannot login to the portal',
          requester_email: 'bob@corp.test',
          priority: 'high',
          custom_fields: { plan: 'silver', vip: true },
        },
      ],
      [
        'refund',
        {
          subject: 'Refund request, invoice #42',
          requester_email: 'Ann@Example.com',
          priority: 'low',
          custom_fields: { plan: 'gold' },
        },
      ],
      [
        'e-mail',
        {
          subject: 'E-mail bounces',
          requester_email: 'carl@other.test',
          priority: 'urgent',
          custom_fields: { seats: '3' },
        },
      ],
    ];
    for (const [name, patch] of tickets) {
      const r = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { ...base, ...patch },
      });
      refs[name] = r.body.ticket.reference;
    }
  });

  const found = async (query: string) => {
    const response = await gateway.call('GET', `/api/tickets?${query}`, { key: account.apiKey });
    expect(response.status).toBe(200);
    expect(response.body.meta.total).toBe(response.body.data.length);
    return response.body.data.map((t: { reference: string }) => t.reference);
  };
  const ref = (...names: string[]) => names.map((n) => refs[n]);

  it('filters by each field', async () => {
    expect(await found('status=open')).toEqual(ref('e-mail', 'refund', 'login', 'invoice'));
    expect(await found('status=closed')).toEqual([]);
    expect(await found('priority=high')).toEqual(ref('login', 'invoice'));
    expect(await found(`assignee_id=${account.agents[0]?.id}`)).toEqual(ref('refund', 'invoice'));
    expect(await found('requester_email=ANN@example.com')).toEqual(ref('refund', 'invoice'));
    expect(await found('custom_fields[plan]=gold')).toEqual(ref('refund', 'invoice'));
    expect(await found('custom_fields[seats]=3')).toEqual(ref('e-mail', 'invoice'));
    expect(await found('custom_fields[vip]=true')).toEqual(ref('login'));
    expect(await found('custom_fields[plan]=Gold')).toEqual([]);
  });

  it('combines filters with AND', async () => {
    expect(await found('priority=high&custom_fields[plan]=gold')).toEqual(ref('invoice'));
    expect(await found('status=open&requester_email=ann@example.com&priority=low')).toEqual(ref('refund'));
    expect(await found('custom_fields[plan]=gold&custom_fields[seats]=3')).toEqual(ref('invoice'));
    expect(await found(`assignee_id=${account.agents[1]?.id}&priority=urgent`)).toEqual(ref('e-mail'));
    expect(await found('priority=low&priority_unknown=1&custom_fields[plan]=silver')).toEqual([]);
  });

  it('searches subject word prefixes, reference, bare number, e-mail and domain', async () => {
    expect(await found('search=invoice')).toEqual(ref('refund', 'invoice'));
    expect(await found('search=INV')).toEqual(ref('refund', 'invoice'));
    expect(await found('search=voice')).toEqual([]);
    expect(await found('search=invoice%20march')).toEqual(ref('invoice'));
    expect(await found(`search=${refs.login?.toLowerCase()}`)).toEqual(ref('login'));
    expect(await found(`search=${refs.login?.slice(0, 6)}`)).toHaveLength(4);
    expect(await found(`search=${Number(refs.refund?.slice(4))}`)).toEqual(ref('refund'));
    expect(await found('search=ann@ex')).toEqual(ref('refund', 'invoice'));
    expect(await found('search=corp.test')).toEqual(ref('login'));
    expect(await found('search=e-mail')).toEqual(ref('e-mail'));
    expect(await found('search=bounces&priority=urgent')).toEqual(ref('e-mail'));
    expect(await found('search=invoice&custom_fields[plan]=gold&priority=low')).toEqual(ref('refund'));
  });

  it('filters by a custom field value too long to stand in a key (1,024 multibyte characters)', async () => {
    const long = 'é'.repeat(1024);
    const created = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: {
        ...base,
        subject: 'Long value',
        requester_email: 'long@example.com',
        custom_fields: { note: long },
      },
    });
    expect(created.status).toBe(201);
    expect(await found(`custom_fields[note]=${encodeURIComponent(long)}`)).toEqual([
      created.body.ticket.reference,
    ]);
    expect(await found(`custom_fields[note]=${encodeURIComponent(long.slice(1))}`)).toEqual([]);
  });

  it("never shows another account's tickets", async () => {
    const other = await createTestAccount();
    const response = await gateway.call('GET', '/api/tickets?search=invoice', { key: other.apiKey });
    expect(response.body.data).toEqual([]);
    const all = await gateway.call('GET', '/api/tickets', { key: other.apiKey });
    expect(all.body.meta.total).toBe(0);
    const byEmail = await gateway.call('GET', '/api/tickets?requester_email=ann@example.com', {
      key: other.apiKey,
    });
    expect(byEmail.body.data).toEqual([]);
  });
});
