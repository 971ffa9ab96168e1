import { describe, expect, it } from 'vitest';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { beforeCallOnce } from '#test/support/store-hooks.ts';
import { type FieldRule, sharedTicketRules } from '#test/support/ticket-rules.ts';

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const valid = {
  subject: 'Cannot log in',
  description: 'Since this morning.',
  requester_email: 'Ann@Example.com',
};

const gateway = useGateway();

describe('POST /api/tickets', () => {
  it('creates a ticket with every field of the create response', async () => {
    const account = await createTestAccount({ ticket_prefix: 'ACME' });
    const response = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body: valid });
    expect(response.status).toBe(201);
    expect(response.body.message).toBe('Ticket created successfully.');
    const ticket = response.body.ticket;
    expect(Object.keys(ticket)).toEqual([
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
      'parent_uuid',
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
    expect(ticket).toMatchObject({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      reference: 'ACME-000001',
      subject: 'Cannot log in',
      status: 'open',
      priority: 'medium',
      category: null,
      channel: 'api',
      requester: {
        type: 'email',
        name: null,
        email: 'Ann@Example.com',
        phone: null,
        contact_id: null,
        client_id: null,
      },
      assignee: null,
      team: null,
      parent_uuid: null,
      custom_fields: {},
      tags: [],
      due_at: null,
      resolved_at: null,
      closed_at: null,
    });
    expect(ticket.created_at).toMatch(TIMESTAMP);
    expect(ticket.updated_at).toBe(ticket.created_at);
    // The description is the conversation's first message: the requester waits from the ticket's creation.
    expect(ticket.last_message_at).toBe(ticket.created_at);
    expect(ticket.waiting_since).toBe(ticket.created_at);
  });

  it('uses the account default priority, the given channel, category by slug or id, and keeps custom fields', async () => {
    const account = await createTestAccount({ default_priority: 'high' });
    const bug = account.categories.find((c) => c.slug === 'bug');
    const bySlug = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: {
        ...valid,
        category_slug: 'billing',
        channel: 'email',
        custom_fields: { plan: 'gold', seats: 3, vip: true, note: null },
      },
    });
    expect(bySlug.body.ticket).toMatchObject({
      priority: 'high',
      channel: 'email',
      category: { name: 'Billing', slug: 'billing' },
      custom_fields: { plan: 'gold', seats: 3, vip: true, note: null },
    });
    const byId = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { ...valid, category_id: bug?.id, priority: 'low' },
    });
    expect(byId.body.ticket).toMatchObject({ priority: 'low', category: { name: 'Bug', slug: 'bug' } });
  });

  it('links the requester to an existing contact by e-mail, case-insensitively, without creating one', async () => {
    const account = await createTestAccount({
      contacts: [{ email: 'kim@client.test', first_name: 'Kim', last_name: 'Known', phone: '+33 1 23' }],
    });
    const response = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { ...valid, requester_email: 'KIM@client.test' },
    });
    expect(response.body.ticket.requester).toEqual({
      type: 'email',
      name: 'Kim Known',
      email: 'KIM@client.test',
      phone: '+33 1 23',
      contact_id: account.contacts[0]?.id,
      client_id: null,
    });
  });

  it('routes to the category default team', async () => {
    const account = await createTestAccount({
      teams: [{ name: 'Billing' }],
      categories: [{ slug: 'billing', name: 'Billing', default_team: 'Billing' }],
    });
    const response = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { ...valid, category_slug: 'billing' },
    });
    expect(response.body.ticket.team).toEqual({ id: account.teams[0]?.id, name: 'Billing' });
  });

  it('a create whose category’s team is deleted before its commit twice answers 409 Retry-After, nothing written', async () => {
    // Once, the create decides again on the configuration as it now is (test/api/teams-delete.test.ts); a second
    // loss is answered as before: sent again, it takes the category's team as it then is.
    const file = {
      teams: [{ name: 'Billing' }, { name: 'Sales' }, { name: 'Support' }],
      categories: [{ slug: 'refunds', name: 'Refunds', default_team: 'Billing' }],
    };
    const account = await createTestAccount(file);
    const [billing, sales] = account.teams.map((t) => t.id);
    const ticketInto = (teamId: number | undefined) => (input: Record<string, unknown>) =>
      (input.TransactItems as { Put?: { Item?: Record<string, unknown> } }[]).some(
        (a) => a.Put?.Item?.type === 'ticket' && (a.Put.Item.team as { id?: number } | null)?.id === teamId,
      );
    const reroute = async (from: number | undefined, to: string) => {
      const { slug } = account;
      const routed = { slug: 'refunds', name: 'Refunds', default_team: to };
      await applyAccountFile({ slug, name: `Test ${slug}`, plan: 'pro', ...file, categories: [routed] });
      const deleted = await gateway.call('DELETE', `/api/teams/${from}`, { key: account.apiKey });
      expect(deleted.status, deleted.text).toBe(200);
    };
    beforeCallOnce('TransactWriteItemsCommand', ticketInto(billing), async () => {
      await reroute(billing, 'Sales');
      beforeCallOnce('TransactWriteItemsCommand', ticketInto(sales), () => reroute(sales, 'Support'));
    });
    const response = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { ...valid, category_slug: 'refunds' },
    });
    expect(response.status, response.text).toBe(409);
    expect(response.headers.get('retry-after')).toBe('1');
    const list = await gateway.call('GET', '/api/tickets', { key: account.apiKey });
    expect(list.body.meta.total).toBe(0);
  });

  const failures: FieldRule[] = [
    ['missing subject', { subject: undefined }, 'subject', 'The subject field is required.'],
    ['missing description', { description: undefined }, 'description', 'The description field is required.'],
    [
      'missing e-mail',
      { requester_email: undefined },
      'requester_email',
      'The requester email field is required.',
    ],
    [
      'invalid e-mail',
      { requester_email: 'not-an-email' },
      'requester_email',
      'The requester email field must be a valid email address.',
    ],
    [
      'long name',
      { requester_name: 'n'.repeat(256) },
      'requester_name',
      'The requester name field must not be greater than 255 characters.',
    ],
    ['bad channel', { channel: 'fax' }, 'channel', 'The selected channel is invalid.'],
    [
      'non-integer category id',
      { category_id: 'abc' },
      'category_id',
      'The category id field must be an integer.',
    ],
    ['unknown category id', { category_id: 999999 }, 'category_id', 'The selected category id is invalid.'],
    [
      'unknown category slug',
      { category_slug: 'nope' },
      'category_slug',
      'The selected category slug is invalid.',
    ],
    ...sharedTicketRules,
  ];

  it.each(failures)(
    'answers 422 for %s, names the field, and writes nothing',
    async (_label, patch, field, message) => {
      const account = await createTestAccount();
      const response = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { ...valid, ...patch },
      });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({ message, errors: { [field]: [message] } });
      await expectNothingWritten(account.apiKey);
    },
  );

  it('answers 422 on both fields when both category fields are given, and writes nothing', async () => {
    const account = await createTestAccount();
    const response = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { ...valid, category_id: 1, category_slug: 'bug' },
    });
    expect(response.status).toBe(422);
    expect(response.body).toEqual({
      message: 'The category id field prohibits category slug from being present. (and 1 more error)',
      errors: {
        category_id: ['The category id field prohibits category slug from being present.'],
        category_slug: ['The category slug field prohibits category id from being present.'],
      },
    });
    await expectNothingWritten(account.apiKey);
  });

  async function expectNothingWritten(key: string) {
    const list = await gateway.call('GET', '/api/tickets', { key });
    expect(list.body.meta.total).toBe(0);
    // Nothing was reserved either: the next ticket still gets number 1.
    const next = await gateway.call('POST', '/api/tickets', { key, body: valid });
    expect(next.body.ticket.reference).toBe('TKT-000001');
  }

  it("treats another account's category as unknown", async () => {
    const mine = await createTestAccount();
    const theirs = await createTestAccount({ categories: [{ slug: 'secret', name: 'Secret' }] });
    const secret = theirs.categories.find((c) => c.slug === 'secret');
    const byId = await gateway.call('POST', '/api/tickets', {
      key: mine.apiKey,
      body: { ...valid, category_id: secret?.id },
    });
    const bySlug = await gateway.call('POST', '/api/tickets', {
      key: mine.apiKey,
      body: { ...valid, category_slug: 'secret' },
    });
    expect(byId.status).toBe(422);
    expect(bySlug.status).toBe(422);
  });

  it('answers 400, 415 and 413 for bodies that are not JSON objects, not JSON, or too large', async () => {
    const account = await createTestAccount();
    expect((await gateway.call('POST', '/api/tickets', { key: account.apiKey, body: '{oops' })).status).toBe(
      400,
    );
    expect((await gateway.call('POST', '/api/tickets', { key: account.apiKey, body: '[]' })).status).toBe(
      400,
    );
    const text = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: JSON.stringify(valid),
      headers: { 'Content-Type': 'text/plain' },
    });
    expect(text.status).toBe(415);
    const big = await gateway.call('POST', '/api/tickets', {
      key: account.apiKey,
      body: { ...valid, description: 'x'.repeat(1024 * 1024) },
    });
    expect(big.status).toBe(413);
  });

  it('hands out 40 distinct consecutive references to 40 concurrent creates', async () => {
    const account = await createTestAccount();
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        gateway.call('POST', '/api/tickets', {
          key: account.apiKey,
          body: { ...valid, subject: `Concurrent ${i}` },
        }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(40).fill(201));
    const numbers = responses.map((r) => Number(r.body.ticket.reference.slice(4))).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const list = await gateway.call('GET', '/api/tickets?per_page=100', { key: account.apiKey });
    expect(list.body.meta.total).toBe(40);
    expect(list.body.data).toHaveLength(40);
  });
});
