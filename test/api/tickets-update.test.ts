import { describe, expect, it } from 'vitest';
import { getTicketStats } from '#lib/data/tickets/tickets.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useGateway } from '#test/support/http.ts';
import { type FieldRule, sharedTicketRules } from '#test/support/ticket-rules.ts';
import { ticketsThrough } from '#test/support/tickets.ts';

/** GET and PATCH /api/tickets/{ticket} (decisions.md, "One ticket: read and update"). */
const gateway = useGateway();
/** The tests that run at chosen instants have a manual clock; the others, the system clock. */
const clock = useManualClock({ lazy: true });

const valid = {
  subject: 'Printer on fire',
  description: 'Smoke everywhere.',
  requester_email: 'Ann@Example.com',
};
const NOT_FOUND = { message: 'Not found.' };
const QUOTED_ETAG = /^"[^"]*"$/;

/** Runs the code under test at a fixed instant; returns the API's timestamp of that instant. */
function at(iso: string): string {
  clock().jumpTo(Date.parse(iso));
  return iso.replace('Z', '.000000Z');
}

const { create, get, patch, update, current, list } = ticketsThrough(gateway, valid);

describe('GET /api/tickets/{ticket}', () => {
  it('answers the create response fields and an ETag, by uuid and by reference in any case', async () => {
    const account = await createTestAccount();
    const created = await create(account.apiKey, { custom_fields: { plan: 'gold' } });
    const byUuid = await get(account.apiKey, created.uuid);
    expect(byUuid.status).toBe(200);
    expect(byUuid.body).toEqual({ data: created });
    expect(Object.keys(byUuid.body.data)).toEqual(Object.keys(created));
    expect(byUuid.headers.get('content-type')).toBe('application/json');
    const etag = byUuid.headers.get('etag');
    expect(etag).toMatch(QUOTED_ETAG);
    for (const ref of ['TKT-000001', 'tkt-000001', 'Tkt-000001']) {
      const response = await get(account.apiKey, ref);
      expect(response.status, ref).toBe(200);
      expect(response.body, ref).toEqual({ data: created });
      expect(response.headers.get('etag'), ref).toBe(etag);
    }
  });

  it("answers 404 Not found for an unknown, malformed or another account's ticket, on GET and PATCH", async () => {
    const mine = await createTestAccount({ ticket_prefix: 'ACME' });
    const theirs = await createTestAccount();
    const own = await create(mine.apiKey);
    const foreign = await create(theirs.apiKey, { subject: 'Their secret' });
    expect(own.reference).toBe('ACME-000001');
    expect(foreign.reference).toBe('TKT-000001');
    // Unknown: a well-formed uuid and reference that name nothing. Malformed: anything else.
    const unknownUuid = `${own.uuid.slice(0, -4)}${own.uuid.endsWith('0000') ? 'ffff' : '0000'}`;
    const refs = [
      unknownUuid,
      '00000000-0000-4000-8000-000000000000',
      'ACME-000002',
      'ACME-999999',
      'TKT-000001', // another prefix than the account's
      'not-a-ticket',
      'ACME-',
      'ACME-00000x',
      '12345',
      foreign.uuid,
    ];
    for (const ref of refs) {
      const read = await get(mine.apiKey, encodeURIComponent(ref));
      expect(read.status, ref).toBe(404);
      expect(read.body, ref).toEqual(NOT_FOUND);
      const write = await patch(mine.apiKey, encodeURIComponent(ref), { subject: 'Hijacked' });
      expect(write.status, ref).toBe(404);
      expect(write.body, ref).toEqual(NOT_FOUND);
    }
    // Their ticket was not touched.
    const after = await current(theirs.apiKey, foreign.uuid);
    expect(after.ticket).toEqual(foreign);
  });

  // DELETE is a route of the path since deleting came (test/api/trash.test.ts).
  it('answers 405 with Allow: GET, PATCH, DELETE for other methods on the path', async () => {
    const account = await createTestAccount();
    const created = await create(account.apiKey);
    for (const method of ['PUT', 'POST']) {
      const response = await gateway.call(method, `/api/tickets/${created.uuid}`, {
        key: account.apiKey,
        body: { subject: 'x' },
      });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow'), method).toBe('GET, PATCH, DELETE');
      expect(typeof response.body.message, method).toBe('string');
    }
    expect((await current(account.apiKey, created.uuid)).ticket).toEqual(created);
  });
});

describe('PATCH /api/tickets/{ticket}', () => {
  it('answers 200 with the message, the updated ticket and a new ETag that GET then gives', async () => {
    const account = await createTestAccount();
    const created = await create(account.apiKey);
    const before = await current(account.apiKey, created.uuid);
    const response = await patch(account.apiKey, 'tkt-000001', { priority: 'high' });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      message: 'Ticket updated successfully.',
      ticket: { ...created, priority: 'high', updated_at: response.body.ticket.updated_at },
    });
    expect(Object.keys(response.body)).toEqual(['message', 'ticket']);
    expect(response.body.ticket.updated_at > created.updated_at).toBe(true);
    const etag = response.headers.get('etag');
    expect(etag).toMatch(QUOTED_ETAG);
    expect(etag).not.toBe(before.etag);
    const after = await current(account.apiKey, created.uuid);
    expect(after.ticket).toEqual(response.body.ticket);
    expect(after.etag).toBe(etag);
  });

  it('moves status with its timestamps: resolved_at on resolve, cleared on reopen, closed_at on close', async () => {
    const account = await createTestAccount();
    const t0 = at('2026-04-01T09:00:00Z');
    const created = await create(account.apiKey);
    expect(created).toMatchObject({ status: 'open', created_at: t0, updated_at: t0, resolved_at: null });
    const key = account.apiKey;
    const steps: [string, string, { resolved: string | null; closed: string | null }][] = [];
    const move = async (status: string, iso: string) => {
      const now = at(iso);
      const ticket = await update(key, created.uuid, { status });
      expect(ticket.status).toBe(status);
      expect(ticket.updated_at).toBe(now);
      expect(ticket.created_at).toBe(t0);
      steps.push([status, now, { resolved: ticket.resolved_at, closed: ticket.closed_at }]);
      return { now, ticket };
    };
    await move('pending', '2026-04-01T10:00:00Z');
    await move('in_progress', '2026-04-01T11:00:00Z');
    const resolved = await move('resolved', '2026-04-01T12:00:00Z');
    expect(resolved.ticket.resolved_at).toBe(resolved.now);
    await move('open', '2026-04-01T13:00:00Z'); // a reopen
    const again = await move('resolved', '2026-04-01T14:00:00Z');
    await move('pending', '2026-04-01T15:00:00Z'); // reopen to pending
    const third = await move('resolved', '2026-04-01T16:00:00Z');
    await move('in_progress', '2026-04-01T17:00:00Z'); // reopen to in_progress
    const fourth = await move('resolved', '2026-04-01T18:00:00Z');
    const closed = await move('closed', '2026-04-01T19:00:00Z');
    expect(steps.map(([status, , stamps]) => [status, stamps])).toEqual([
      ['pending', { resolved: null, closed: null }],
      ['in_progress', { resolved: null, closed: null }],
      ['resolved', { resolved: resolved.now, closed: null }],
      ['open', { resolved: null, closed: null }],
      ['resolved', { resolved: again.now, closed: null }],
      ['pending', { resolved: null, closed: null }],
      ['resolved', { resolved: third.now, closed: null }],
      ['in_progress', { resolved: null, closed: null }],
      ['resolved', { resolved: fourth.now, closed: null }],
      // Closing a resolved ticket keeps its resolved_at.
      ['closed', { resolved: fourth.now, closed: closed.now }],
    ]);
    expect((await current(key, created.uuid)).ticket).toEqual(closed.ticket);
  });

  it('closing an unresolved ticket sets closed_at and resolved_at to the same instant', async () => {
    const account = await createTestAccount();
    at('2026-04-02T09:00:00Z');
    const created = await create(account.apiKey);
    const now = at('2026-04-02T09:30:00Z');
    const ticket = await update(account.apiKey, created.uuid, { status: 'closed' });
    expect(ticket).toMatchObject({ status: 'closed', closed_at: now, resolved_at: now, updated_at: now });
  });

  it('refuses any change of a closed ticket with 422 on status, and changes nothing', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const created = await create(account.apiKey);
    await update(account.apiKey, created.uuid, { status: 'closed' });
    const closed = await current(account.apiKey, created.uuid);
    at('2030-01-01T00:00:00Z');
    for (const body of [
      { status: 'open' },
      { status: 'resolved' },
      { status: 'closed' },
      { priority: 'urgent' },
      { subject: 'Reopen me' },
      { assignee_id: account.agents[0]?.id },
      { custom_fields: { plan: 'gold' } },
    ]) {
      const response = await patch(account.apiKey, created.uuid, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(Object.keys(response.body.errors), JSON.stringify(body)).toEqual(['status']);
      expect(response.body.message).toBe(response.body.errors.status[0]);
    }
    const after = await current(account.apiKey, created.uuid);
    expect(after).toEqual(closed);
    expect((await list(account.apiKey, 'status=closed')).uuids).toEqual([created.uuid]);
  });

  it('recomputes due_at from created_at when the priority or category changes', async () => {
    const account = await createTestAccount({
      sla_policies: [
        { name: 'Urgent', priority: 'urgent', resolution_minutes: 60 },
        { name: 'High', priority: 'high', resolution_minutes: 240 },
        { name: 'Bugs', category: 'bug', resolution_minutes: 1440 },
        { name: 'Urgent bugs', priority: 'urgent', category: 'bug', resolution_minutes: 30 },
      ],
    });
    const key = account.apiKey;
    const t0 = at('2026-05-04T08:00:00Z');
    const created = await create(key, { priority: 'low' });
    expect(created.due_at).toBeNull();
    // Changes happen later: due_at counts from created_at, not from the change.
    at('2026-05-04T10:00:00Z');
    expect((await update(key, created.uuid, { priority: 'urgent' })).due_at).toBe(
      '2026-05-04T09:00:00.000000Z',
    );
    expect((await update(key, created.uuid, { priority: 'high' })).due_at).toBe(
      '2026-05-04T12:00:00.000000Z',
    );
    expect((await update(key, created.uuid, { priority: 'medium' })).due_at).toBeNull();
    const bug = await update(key, created.uuid, { category_slug: 'bug' });
    expect(bug.due_at).toBe('2026-05-05T08:00:00.000000Z');
    const urgentBug = await update(key, created.uuid, { priority: 'urgent' });
    expect(urgentBug.due_at).toBe('2026-05-04T08:30:00.000000Z');
    expect((await update(key, created.uuid, { category_id: null })).due_at).toBe(
      '2026-05-04T09:00:00.000000Z',
    );
    const final = await current(key, created.uuid);
    expect(final.ticket).toMatchObject({ created_at: t0, priority: 'urgent', category: null });
    expect(final.ticket.due_at).toBe('2026-05-04T09:00:00.000000Z');
  });

  it('counts a business-hours policy in the calendar when the priority changes', async () => {
    const account = await createTestAccount({
      business_hours: {
        time_zone: 'Europe/Paris',
        weekly: Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri'].map((d) => [d, [['09:00', '17:00']]])),
      },
      sla_policies: [{ name: 'High', priority: 'high', resolution_minutes: 60, business_hours: true }],
    });
    at('2026-03-13T15:30:00Z'); // Friday 16:30 in Paris
    const created = await create(account.apiKey, { priority: 'low' });
    at('2026-03-16T10:00:00Z');
    const ticket = await update(account.apiKey, created.uuid, { priority: 'high' });
    expect(ticket.due_at).toBe('2026-03-16T08:30:00.000000Z'); // Monday 09:30 in Paris
  });

  it('assigns an active agent, unassigns with null, and refuses inactive or foreign agents with 422', async () => {
    const account = await createTestAccount({
      agents: [...agentsFile(2), { email: 'gone@desk.test', name: 'Gone', active: false }],
    });
    // Agent ids are numbered per account: the other account's 5th agent has an id this account does not have.
    const other = await createTestAccount({ agents: agentsFile(5) });
    const foreign = other.agents[4]?.id;
    expect(account.agents.map((a) => a.id)).not.toContain(foreign);
    const [first, second, gone] = account.agents;
    const key = account.apiKey;
    const created = await create(key);
    expect(created.assignee).toBeNull();
    const assigned = await update(key, created.uuid, { assignee_id: first?.id });
    expect(assigned.assignee).toEqual({ id: first?.id, name: 'Agent 1', email: 'agent1@desk.test' });
    const moved = await update(key, created.uuid, { assignee_id: String(second?.id) });
    expect(moved.assignee).toEqual({ id: second?.id, name: 'Agent 2', email: 'agent2@desk.test' });
    const before = await current(key, created.uuid);
    for (const id of [gone?.id, foreign, 99_999_999]) {
      const response = await patch(key, created.uuid, { assignee_id: id });
      expect(response.status, String(id)).toBe(422);
      expect(response.body).toEqual({
        message: 'The selected assignee id is invalid.',
        errors: { assignee_id: ['The selected assignee id is invalid.'] },
      });
    }
    expect(await current(key, created.uuid)).toEqual(before);
    const unassigned = await update(key, created.uuid, { assignee_id: null });
    expect(unassigned.assignee).toBeNull();
    expect((await list(key, `assignee_id=${second?.id}`)).total).toBe(0);
  });

  it('sets and clears team and category by id or slug; unknown or foreign ones are 422', async () => {
    const account = await createTestAccount({ teams: [{ name: 'Tech' }, { name: 'Sales' }] });
    // Ids are numbered per account: the other account's 3rd team has an id this account does not have.
    const other = await createTestAccount({
      teams: [{ name: 'A' }, { name: 'B' }, { name: 'Theirs' }],
      categories: [{ slug: 'secret', name: 'Secret' }],
    });
    const foreignTeam = other.teams[2]?.id;
    const foreignCategory = other.categories.find((c) => c.slug === 'secret')?.id;
    expect(account.teams.map((t) => t.id)).not.toContain(foreignTeam);
    expect(account.categories.map((c) => c.id)).not.toContain(foreignCategory);
    const key = account.apiKey;
    const [tech, sales] = account.teams;
    const bug = account.categories.find((c) => c.slug === 'bug');
    const created = await create(key);
    expect(await update(key, created.uuid, { team_id: tech?.id })).toMatchObject({
      team: { id: tech?.id, name: 'Tech' },
    });
    expect(await update(key, created.uuid, { team_id: sales?.id })).toMatchObject({
      team: { id: sales?.id, name: 'Sales' },
    });
    expect((await update(key, created.uuid, { team_id: null })).team).toBeNull();
    expect((await update(key, created.uuid, { category_id: bug?.id })).category).toEqual({
      name: 'Bug',
      slug: 'bug',
    });
    expect((await update(key, created.uuid, { category_slug: 'billing' })).category).toEqual({
      name: 'Billing',
      slug: 'billing',
    });
    expect((await update(key, created.uuid, { category_slug: null })).category).toBeNull();
    await update(key, created.uuid, { category_slug: 'billing', team_id: tech?.id });
    const before = await current(key, created.uuid);
    const failures: [Record<string, unknown>, string, string][] = [
      [{ team_id: 99_999_999 }, 'team_id', 'The selected team id is invalid.'],
      [{ team_id: foreignTeam }, 'team_id', 'The selected team id is invalid.'],
      [{ category_id: 99_999_999 }, 'category_id', 'The selected category id is invalid.'],
      [{ category_id: foreignCategory }, 'category_id', 'The selected category id is invalid.'],
      [{ category_slug: 'secret' }, 'category_slug', 'The selected category slug is invalid.'],
      [{ category_slug: 'nope' }, 'category_slug', 'The selected category slug is invalid.'],
    ];
    for (const [body, field, message] of failures) {
      const response = await patch(key, created.uuid, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body, JSON.stringify(body)).toEqual({ message, errors: { [field]: [message] } });
    }
    const both = await patch(key, created.uuid, { category_id: bug?.id, category_slug: 'bug' });
    expect(both.status).toBe(422);
    expect(both.body.errors.category_id).toEqual([
      'The category id field prohibits category slug from being present.',
    ]);
    expect(await current(key, created.uuid)).toEqual(before);
  });

  it('changes subject and description, merges custom fields (null removes a key) and replaces tags', async () => {
    const account = await createTestAccount();
    const key = account.apiKey;
    const created = await create(key, { custom_fields: { plan: 'gold', seats: 3, vip: true } });
    const texts = await update(key, created.uuid, { subject: '  New subject  ', description: 'New text' });
    expect(texts).toMatchObject({ subject: 'New subject', description: 'New text' });
    const merged = await update(key, created.uuid, {
      custom_fields: { plan: 'silver', seats: null, region: 'eu', ratio: 0.5, beta: false },
    });
    expect(merged.custom_fields).toEqual({
      plan: 'silver',
      vip: true,
      region: 'eu',
      ratio: 0.5,
      beta: false,
    });
    const untouched = await update(key, created.uuid, { tags: ['vip', 'billing'] });
    expect(untouched.custom_fields).toEqual(merged.custom_fields);
    expect(untouched.tags).toEqual(['vip', 'billing']);
    expect((await update(key, created.uuid, { tags: ['escalated'] })).tags).toEqual(['escalated']);
    expect((await update(key, created.uuid, { tags: [] })).tags).toEqual([]);
    const final = await current(key, created.uuid);
    expect(final.ticket).toMatchObject({
      subject: 'New subject',
      description: 'New text',
      custom_fields: { plan: 'silver', vip: true, region: 'eu', ratio: 0.5, beta: false },
      tags: [],
      requester: created.requester,
      reference: created.reference,
      created_at: created.created_at,
    });
    expect((await list(key, 'custom_fields[seats]=3')).total).toBe(0);
    expect((await list(key, 'custom_fields[plan]=silver')).uuids).toEqual([created.uuid]);
    expect((await list(key, 'custom_fields[beta]=false')).uuids).toEqual([created.uuid]);
  });

  it('answers 422 for an empty body or one with only unknown fields, and changes nothing', async () => {
    const account = await createTestAccount();
    const created = await create(account.apiKey);
    const before = await current(account.apiKey, created.uuid);
    for (const body of [{}, { colour: 'red', requester_email: 'x@y.test', uuid: 'x', created_at: 'now' }]) {
      const response = await patch(account.apiKey, created.uuid, body);
      expect(response.status, JSON.stringify(body)).toBe(422);
      expect(response.body.message).toMatch(/at least one field/);
      expect(Object.values(response.body.errors).flat()).toEqual([response.body.message]);
    }
    expect(await current(account.apiKey, created.uuid)).toEqual(before);
  });

  const failures: FieldRule[] = [
    ['null subject', { subject: null }, 'subject', 'The subject field is required.'],
    ['blank description', { description: '' }, 'description', 'The description field is required.'],
    ['bad status', { status: 'done' }, 'status', 'The selected status is invalid.'],
    [
      'non-integer assignee',
      { assignee_id: 'abc' },
      'assignee_id',
      'The assignee id field must be an integer or null.',
    ],
    ['non-integer team', { team_id: 'x1' }, 'team_id', 'The team id field must be an integer or null.'],
    [
      'non-integer category id',
      { category_id: true },
      'category_id',
      'The category id field must be an integer or null.',
    ],
    ['empty tag', { tags: ['a', ' '] }, 'tags.1', 'A tag must not be empty.'],
    ['tags not an array', { tags: 'vip' }, 'tags', 'The tags field must be an array of strings.'],
    ...sharedTicketRules,
  ];

  it.each(failures)(
    'answers 422 for %s, names the field as the create does, and changes nothing',
    async (_label, body, field, message) => {
      const account = await createTestAccount();
      const created = await create(account.apiKey);
      const before = await current(account.apiKey, created.uuid);
      const response = await patch(account.apiKey, created.uuid, { ...body });
      expect(response.status).toBe(422);
      expect(response.body).toEqual({ message, errors: { [field]: [message] } });
      expect(await current(account.apiKey, created.uuid)).toEqual(before);
    },
  );

  it('changes 24 custom fields in one update, and refuses 25 (their removals pass one transaction) unchanged', async () => {
    const account = await createTestAccount();
    const fields = (n: number, value: string) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `${value}${i}`]));
    const created = await create(account.apiKey, { custom_fields: fields(40, 'old') });
    const before = await current(account.apiKey, created.uuid);
    // Each changed field moves two counters, a posting and a block key: 1 + 4 × 24 = 97 of 100 actions fit.
    const tooMany = await patch(account.apiKey, created.uuid, { custom_fields: fields(25, 'new') });
    expect(tooMany.status).toBe(422);
    const message =
      'The update changes too many custom fields and subject words at once: send it in two updates.';
    expect(tooMany.body).toEqual({ message, errors: { custom_fields: [message] } });
    expect(await current(account.apiKey, created.uuid)).toEqual(before);

    const most = await update(account.apiKey, created.uuid, { custom_fields: fields(24, 'new') });
    expect(most.custom_fields).toEqual({ ...fields(40, 'old'), ...fields(24, 'new') });
    for (const [query, total] of [
      ['custom_fields[k23]=new23', 1],
      ['custom_fields[k23]=old23', 0],
      ['custom_fields[k23]=new23&status=open', 1],
      ['custom_fields[k23]=old23&status=open', 0],
      ['custom_fields[k39]=old39&custom_fields[k0]=new0', 1],
    ] as const) {
      const found = await gateway.call('GET', `/api/tickets?${query}`, { key: account.apiKey });
      expect(found.body.meta.total, query).toBe(total);
    }
  });

  // Numbers that are not ids, and category slugs of the wrong length: the create answers these in its own words
  // ("The category id field must be an integer.", "... must not be greater than 255 characters."); so must the
  // PATCH, naming the field, not with the validation library's internal message ("Invalid integer: ...").
  const idMessages: [string, Record<string, unknown>, string, string][] = [
    ['fractional assignee id', { assignee_id: 1.5 }, 'assignee_id', 'assignee id'],
    ['fractional team id', { team_id: 2.5 }, 'team_id', 'team id'],
    ['fractional category id', { category_id: 1.5 }, 'category_id', 'category id'],
    ['zero assignee id', { assignee_id: 0 }, 'assignee_id', 'assignee id'],
    ['negative team id', { team_id: -1 }, 'team_id', 'team id'],
    ['huge category id', { category_id: 1e20 }, 'category_id', 'category id'],
    ['long category slug', { category_slug: 's'.repeat(256) }, 'category_slug', 'category slug'],
  ];

  it.each(idMessages)(
    'answers 422 for a %s in words that name the field',
    async (_label, body, field, name) => {
      const account = await createTestAccount();
      const created = await create(account.apiKey);
      const response = await patch(account.apiKey, created.uuid, body);
      expect(response.status).toBe(422);
      expect(Object.keys(response.body.errors)).toEqual([field]);
      const [message] = response.body.errors[field];
      expect(message).toMatch(new RegExp(`^The (selected )?${name} (field|is)`));
      expect(response.body.message).toBe(message);
    },
  );

  it('treats an empty category slug as the create does (empty counts as absent), not with an internal message', async () => {
    const account = await createTestAccount();
    const created = await create(account.apiKey, { category_slug: 'bug' });
    const response = await patch(account.apiKey, created.uuid, { category_slug: '  ' });
    // decisions.md: an empty string counts as absent, an optional field then being null.
    expect(response.text).not.toMatch(/Invalid length/);
    if (response.status === 200) expect(response.body.ticket.category).toBeNull();
    else expect(response.status).toBe(422);
  });

  it('refuses custom fields that would pass 50 once merged, and changes nothing', async () => {
    const account = await createTestAccount();
    const fields = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`a${i}`, i]));
    const created = await create(account.apiKey, { custom_fields: fields });
    const before = await current(account.apiKey, created.uuid);
    const more = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`b${i}`, i]));
    const response = await patch(account.apiKey, created.uuid, { custom_fields: more });
    expect(response.status).toBe(422);
    expect(Object.keys(response.body.errors)).toEqual(['custom_fields']);
    expect(await current(account.apiKey, created.uuid)).toEqual(before);
  });

  it('If-Match: the current ETag and * succeed; a stale ETag answers 412 and changes nothing', async () => {
    const account = await createTestAccount();
    const key = account.apiKey;
    const created = await create(key);
    const first = await current(key, created.uuid);
    const withCurrent = await patch(
      key,
      created.uuid,
      { priority: 'high' },
      { 'If-Match': first.etag ?? '' },
    );
    expect(withCurrent.status).toBe(200);
    expect(withCurrent.body.ticket.priority).toBe('high');
    const second = withCurrent.headers.get('etag') ?? '';
    expect(second).not.toBe(first.etag);
    const withStar = await patch(key, created.uuid, { priority: 'low' }, { 'If-Match': '*' });
    expect(withStar.status).toBe(200);
    expect(withStar.body.ticket.priority).toBe('low');
    const now = await current(key, created.uuid);
    for (const stale of [first.etag ?? '', second, '"no-such-version"']) {
      const response = await patch(key, created.uuid, { priority: 'urgent' }, { 'If-Match': stale });
      expect(response.status, stale).toBe(412);
      expect(typeof response.body.message).toBe('string');
      expect(response.body.ticket).toBeUndefined();
    }
    // A lost update is refused even when it would change nothing, and by reference too.
    const noop = await patch(key, 'TKT-000001', { priority: 'low' }, { 'If-Match': second });
    expect(noop.status).toBe(412);
    expect(await current(key, created.uuid)).toEqual(now);
    expect((await list(key, 'priority=urgent')).total).toBe(0);
  });

  it('answers 200 to a PATCH that changes nothing and leaves updated_at and the ETag as they were', async () => {
    const account = await createTestAccount({ agents: agentsFile(1) });
    const key = account.apiKey;
    at('2026-06-01T08:00:00Z');
    const created = await create(key, { custom_fields: { plan: 'gold' }, category_slug: 'bug' });
    const set = await update(key, created.uuid, { tags: ['a', 'b'], assignee_id: account.agents[0]?.id });
    const before = await current(key, created.uuid);
    at('2026-06-02T08:00:00Z');
    const response = await patch(key, created.uuid, {
      status: 'open',
      priority: created.priority,
      subject: ` ${created.subject} `,
      description: created.description,
      custom_fields: { plan: 'gold' },
      tags: ['a', 'b'],
      assignee_id: account.agents[0]?.id,
      category_slug: 'bug',
      team_id: null,
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ message: 'Ticket updated successfully.', ticket: set });
    expect(response.body.ticket.updated_at).toBe('2026-06-01T08:00:00.000000Z');
    expect(response.headers.get('etag')).toBe(before.etag);
    expect(await current(key, created.uuid)).toEqual(before);
  });

  it('replays a PATCH with the same Idempotency-Key byte for byte, marked, changing nothing', async () => {
    const account = await createTestAccount();
    const key = account.apiKey;
    at('2026-06-03T08:00:00Z');
    const created = await create(key);
    const idem = { 'Idempotency-Key': `patch-${created.uuid}` };
    at('2026-06-03T09:00:00Z');
    const first = await patch(key, created.uuid, { priority: 'high', subject: 'Once' }, idem);
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // Another change lands in between: the replay must not undo it.
    at('2026-06-03T10:00:00Z');
    await update(key, created.uuid, { priority: 'urgent' });
    const between = await current(key, created.uuid);
    at('2026-06-03T11:00:00Z');
    const again = await patch(key, created.uuid, { subject: 'Once', priority: 'high' }, idem);
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await current(key, created.uuid)).toEqual(between);
    const other = await patch(key, created.uuid, { priority: 'low' }, idem);
    expect(other.status).toBe(422);
    expect(Object.keys(other.body.errors)).toEqual(['idempotency_key']);
    expect(await current(key, created.uuid)).toEqual(between);
  });

  it('keeps nothing for a failed PATCH: the fixed PATCH with the same Idempotency-Key runs', async () => {
    const account = await createTestAccount();
    const created = await create(account.apiKey);
    const idem = { 'Idempotency-Key': `fix-${created.uuid}` };
    const bad = await patch(account.apiKey, created.uuid, { priority: 'asap' }, idem);
    expect(bad.status).toBe(422);
    const fixed = await patch(account.apiKey, created.uuid, { priority: 'urgent' }, idem);
    expect(fixed.status).toBe(200);
    expect(fixed.headers.get('idempotent-replayed')).toBeNull();
    expect(fixed.body.ticket.priority).toBe('urgent');
  });

  it('lists, filters, totals and search reflect an update at once', async () => {
    const account = await createTestAccount({ agents: agentsFile(2) });
    const key = account.apiKey;
    const agent = account.agents[1]?.id;
    const target = await create(key, {
      subject: 'Kettle broken',
      priority: 'low',
      custom_fields: { plan: 'free' },
    });
    const bystander = await create(key, {
      subject: 'Kettle fine',
      priority: 'low',
      custom_fields: { plan: 'free' },
    });
    expect((await list(key, 'status=open')).total).toBe(2);
    const updated = await update(key, target.uuid, {
      status: 'pending',
      priority: 'urgent',
      assignee_id: agent,
      subject: 'Toaster smoking',
      custom_fields: { plan: 'gold' },
    });
    const expectations: [string, string[]][] = [
      ['', [bystander.uuid, target.uuid]],
      ['status=open', [bystander.uuid]],
      ['status=pending', [target.uuid]],
      ['priority=low', [bystander.uuid]],
      ['priority=urgent', [target.uuid]],
      [`assignee_id=${agent}`, [target.uuid]],
      ['custom_fields[plan]=free', [bystander.uuid]],
      ['custom_fields[plan]=gold', [target.uuid]],
      ['status=pending&priority=urgent&custom_fields[plan]=gold', [target.uuid]],
      ['status=open&priority=urgent', []],
      // Combinations that intersect each dimension's blocks: the ticket left low, free and open.
      ['priority=low&custom_fields[plan]=free', [bystander.uuid]],
      ['status=open&custom_fields[plan]=free', [bystander.uuid]],
      ['status=pending&custom_fields[plan]=gold', [target.uuid]],
      [`assignee_id=${agent}&custom_fields[plan]=gold`, [target.uuid]],
      ['custom_fields[plan]=free&search=kettle', [bystander.uuid]],
      ['search=toaster', [target.uuid]],
      ['search=smok', [target.uuid]],
      ['search=kettle', [bystander.uuid]],
      ['search=broken', []],
      ['search=toaster&status=pending', [target.uuid]],
    ];
    for (const [query, uuids] of expectations) {
      const found = await list(key, query);
      expect(found.uuids, query).toEqual(uuids);
      expect(found.total, query).toBe(uuids.length);
    }
    const item = (await list(key, 'status=pending')).data[0];
    expect(item).toMatchObject({
      subject: 'Toaster smoking',
      status: 'pending',
      priority: 'urgent',
      assignee: updated.assignee,
      custom_fields: { plan: 'gold' },
      updated_at: updated.updated_at,
    });
  });
});

describe('least-busy assignment with real work', () => {
  it('counts only open, pending and in-progress tickets; resolving or unassigning frees an agent', async () => {
    const account = await createTestAccount({
      auto_assignment: { enabled: true, method: 'least_busy' },
      agents: agentsFile(3),
    });
    const key = account.apiKey;
    const [a1, a2, a3] = account.agents.map((a) => a.id) as [number, number, number];
    // a1: 2 open work (open, pending); a2: 1 in progress and 1 resolved; a3: 3 (open, pending, in_progress).
    const plan: [number, string][] = [
      [a1, 'open'],
      [a1, 'pending'],
      [a2, 'in_progress'],
      [a2, 'resolved'],
      [a3, 'open'],
      [a3, 'pending'],
      [a3, 'in_progress'],
    ];
    const tickets: Record<string, { uuid: string }[]> = { [a1]: [], [a2]: [], [a3]: [] };
    for (const [agent, status] of plan) {
      const ticket = await create(key);
      await update(key, ticket.uuid, { assignee_id: agent, status });
      tickets[agent]?.push(ticket);
    }
    expect((await getTicketStats(account.accountId)).busy).toMatchObject({ [a1]: 2, [a2]: 1, [a3]: 3 });
    // Counting the resolved ticket would tie a1 and a2 at 2, and the tie would go to a1.
    const next = await create(key);
    expect(next.assignee.id).toBe(a2);
    expect((await getTicketStats(account.accountId)).busy).toMatchObject({ [a1]: 2, [a2]: 2, [a3]: 3 });

    // Resolving two of a3's tickets leaves a3 with 1: the next ticket goes to a3, not to a1.
    for (const t of tickets[a3]?.slice(0, 2) ?? []) await update(key, t.uuid, { status: 'resolved' });
    expect((await getTicketStats(account.accountId)).busy).toMatchObject({ [a1]: 2, [a2]: 2, [a3]: 1 });
    expect((await create(key)).assignee.id).toBe(a3);

    // Reopening counts again; unassigning and closing free the agent.
    const [reopened] = tickets[a3] ?? [];
    await update(key, reopened?.uuid ?? '', { status: 'open' });
    expect((await getTicketStats(account.accountId)).busy).toMatchObject({ [a1]: 2, [a2]: 2, [a3]: 3 });
    await update(key, tickets[a1]?.[0]?.uuid ?? '', { assignee_id: null });
    await update(key, tickets[a1]?.[1]?.uuid ?? '', { status: 'closed' });
    expect((await getTicketStats(account.accountId)).busy).toMatchObject({ [a1]: 0, [a2]: 2, [a3]: 3 });
    expect((await create(key)).assignee.id).toBe(a1);
    // Moving a ticket to another agent moves its work.
    await update(key, tickets[a2]?.[0]?.uuid ?? '', { assignee_id: a3 });
    const busy = (await getTicketStats(account.accountId)).busy;
    expect(busy).toMatchObject({ [a1]: 1, [a2]: 1, [a3]: 4 });
    const all = (await list(key, '')).data as { status: string; assignee: { id: number } | null }[];
    for (const agent of [a1, a2, a3]) {
      const recount = all.filter(
        (t) => t.assignee?.id === agent && ['open', 'pending', 'in_progress'].includes(t.status),
      ).length;
      expect(busy[agent] ?? 0, `agent ${agent}`).toBe(recount);
    }
  });
});
