import { describe, expect, it } from 'vitest';
import { messageKeys } from '#lib/data/keys.ts';
import { queryAll, tableName } from '#lib/data/store/client.ts';
import { agentsFile, createTestAccount } from '#test/support/accounts.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { ticketBody, ticketsThrough } from '#test/support/tickets.ts';

/** The tickets' and messages' events (the account file's agents have theirs: agent.created). */
const TICKET_EVENTS = { types: ['ticket.*', 'message.*'] };

/** POST/GET /api/tickets/{ticket}/messages and GET …/messages/{message} (decisions.md, "Conversations"). */
const gateway = useGateway();
const { create, get, update, list } = ticketsThrough(
  gateway,
  ticketBody({ requester_name: 'Rita Requester' }),
);
const NOT_FOUND = { message: 'Not found.' };

const post = (key: string, ref: string, body: unknown, headers: Record<string, string> = {}) =>
  gateway.call('POST', `/api/tickets/${ref}/messages`, { key, body, headers });
const page = (key: string, ref: string, query = '') =>
  gateway.call('GET', `/api/tickets/${ref}/messages${query ? `?${query}` : ''}`, { key });

async function readAll(key: string, ref: string, query = '') {
  const out: Record<string, unknown>[] = [];
  let after: string | undefined;
  for (let i = 0; i < 1000; i++) {
    const params = new URLSearchParams(query);
    if (after) params.set('after', after);
    const r = await page(key, ref, params.toString());
    expect(r.status, r.text).toBe(200);
    out.push(...r.body.data);
    if (r.body.next_cursor === null) return out;
    after = r.body.next_cursor;
  }
  throw new Error('the conversation did not end');
}

async function accountWithAgents() {
  return createTestAccount({ agents: agentsFile(2) });
}

/** Every message item of a ticket in the table (what a recount sees). */
async function storedMessages(accountId: string, uuid: string) {
  // The ticket's message partition read whole (a Query: a Scan of the table every test file shares grows with it).
  const items = await queryAll({
    TableName: tableName(),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': messageKeys.partition(accountId, uuid) },
    ConsistentRead: true,
  });
  return items;
}

describe('the conversation', () => {
  it('starts with the description, and a reply, a note and a requester message follow in order', async () => {
    const account = await accountWithAgents();
    const agent = account.agents[0] as { id: number; name: string; email: string };
    const ticket = await create(account.apiKey, { description: 'My printer is on fire.' });
    expect(ticket.last_message_at).toBe(ticket.created_at);
    expect(ticket.waiting_since).toBe(ticket.created_at);

    const first = await page(account.apiKey, ticket.uuid);
    expect(first.status).toBe(200);
    expect(first.body.next_cursor).toBeNull();
    expect(first.body.data).toEqual([
      {
        id: expect.stringMatching(/^msg_0000000001[0-9a-f]{16}$/),
        ticket_uuid: ticket.uuid,
        author: { type: 'requester', agent_id: null, name: 'Rita Requester', email: 'c@client.test' },
        visibility: 'public',
        channel: 'api',
        body: 'My printer is on fire.',
        created_at: ticket.created_at,
      },
    ]);

    const reply = await post(account.apiKey, ticket.uuid, { body: '  Unplug it.  ', agent_id: agent.id });
    expect(reply.status, reply.text).toBe(201);
    expect(reply.body.message).toBe('Message added successfully.');
    expect(reply.body.data).toMatchObject({
      ticket_uuid: ticket.uuid,
      author: { type: 'agent', agent_id: agent.id, name: agent.name, email: agent.email },
      visibility: 'public',
      channel: 'api',
      body: 'Unplug it.',
    });
    expect(reply.headers.get('etag')).toBe('"2"');
    expect(reply.body.ticket).toMatchObject({
      status: 'open',
      last_message_at: reply.body.data.created_at,
      updated_at: reply.body.data.created_at,
      waiting_since: null,
    });
    const note = await post(account.apiKey, ticket.uuid, {
      body: 'Customer sounds upset',
      visibility: 'internal',
      agent_id: agent.id,
    });
    expect(note.status, note.text).toBe(201);
    expect(note.body.ticket.waiting_since).toBeNull();
    expect(note.body.ticket.last_message_at).toBe(note.body.data.created_at);
    const back = await post(account.apiKey, ticket.uuid, {
      body: 'Done, still smoking',
      author: 'requester',
    });
    expect(back.status, back.text).toBe(201);
    expect(back.body.data.author).toEqual({
      type: 'requester',
      agent_id: null,
      name: 'Rita Requester',
      email: 'c@client.test',
    });
    expect(back.body.ticket.waiting_since).toBe(back.body.data.created_at);

    const all = await readAll(account.apiKey, ticket.uuid);
    expect(all.map((m) => m.body)).toEqual([
      'My printer is on fire.',
      'Unplug it.',
      'Customer sounds upset',
      'Done, still smoking',
    ]);
    const times = all.map((m) => m.created_at as string);
    expect([...times].sort()).toEqual(times);
    expect(new Set(all.map((m) => m.id)).size).toBe(4);
    for (const m of all) {
      const one = await gateway.call('GET', `/api/tickets/${ticket.reference}/messages/${m.id}`, {
        key: account.apiKey,
      });
      expect(one.status, one.text).toBe(200);
      expect(one.body).toEqual({ data: m });
    }
    const publicOnly = await readAll(account.apiKey, ticket.uuid, 'visibility=public');
    expect(publicOnly.map((m) => m.body)).toEqual([
      'My printer is on fire.',
      'Unplug it.',
      'Done, still smoking',
    ]);
    const internalOnly = await readAll(account.apiKey, ticket.uuid, 'visibility=internal');
    expect(internalOnly.map((m) => m.body)).toEqual(['Customer sounds upset']);
    // GET and the list show the conversation fields too.
    const now = await get(account.apiKey, ticket.uuid);
    expect(now.body.data).toEqual(back.body.ticket);
    const listed = await list(account.apiKey, 'status=open');
    expect(listed.data[0]).toMatchObject({
      last_message_at: back.body.data.created_at,
      waiting_since: back.body.data.created_at,
    });
  });

  it('writes message.created and ticket.updated with what changed, in the feed and filtered by type', async () => {
    const account = await accountWithAgents();
    const agent = account.agents[0] as { id: number };
    const ticket = await create(account.apiKey, { assignee_id: undefined });
    const reply = await post(account.apiKey, ticket.uuid, {
      body: 'On it',
      agent_id: agent.id,
      status: 'pending',
    });
    expect(reply.status, reply.text).toBe(201);
    const feed = await readFeedToEnd(gateway.call, account.apiKey, TICKET_EVENTS);
    expect(feed.events.map((e) => e.type)).toEqual(['ticket.created', 'message.created', 'ticket.updated']);
    const [, created, updated] = feed.events;
    expect(created?.data.object).toEqual(reply.body.data);
    expect(updated?.data.object).toEqual(reply.body.ticket);
    expect(updated?.data.version).toBe(2);
    expect(updated?.data.previous).toEqual({
      status: 'open',
      status_changed_at: ticket.status_changed_at,
      updated_at: ticket.updated_at,
      last_message_at: ticket.last_message_at,
      waiting_since: ticket.waiting_since,
    });
    const messagesOnly = await readFeedToEnd(gateway.call, account.apiKey, { types: ['message.*'] });
    expect(messagesOnly.events.map((e) => e.type)).toEqual(['message.created']);
    const byType = await readFeedToEnd(gateway.call, account.apiKey, { types: ['message.created'] });
    expect(byType.events).toEqual(messagesOnly.events);
    // Webhook endpoints subscribe to it; a type that does not exist is refused.
    const hook = await gateway.call('POST', '/api/webhooks', {
      key: account.apiKey,
      body: { url: 'http://127.0.0.1:9/hook', events: ['message.created', 'message.*'] },
    });
    expect(hook.status, hook.text).toBe(201);
    expect(hook.body.data.events).toEqual(['message.created', 'message.*']);
    const wrong = await gateway.call('POST', '/api/webhooks', {
      key: account.apiKey,
      body: { url: 'http://127.0.0.1:9/hook', events: ['message.updated'] },
    });
    expect(wrong.status).toBe(422);
    await gateway.call('DELETE', `/api/webhooks/${hook.body.data.id}`, { key: account.apiKey });
  });

  it('pages across many messages with a cursor, each message once, in order', async () => {
    const account = await accountWithAgents();
    const agent = account.agents[0] as { id: number };
    const ticket = await create(account.apiKey);
    for (let i = 0; i < 23; i++) {
      const r = await post(
        account.apiKey,
        ticket.uuid,
        i % 3 === 0
          ? { body: `m${i}`, author: 'requester' }
          : { body: `m${i}`, agent_id: agent.id, visibility: i % 3 === 1 ? 'public' : 'internal' },
      );
      expect(r.status, r.text).toBe(201);
    }
    const expected = ['Please', ...Array.from({ length: 23 }, (_, i) => `m${i}`)];
    for (const limit of [1, 5, 7, 24, 100]) {
      const all = await readAll(account.apiKey, ticket.uuid, `limit=${limit}`);
      expect(
        all.map((m) => m.body),
        `limit ${limit}`,
      ).toEqual(expected);
    }
    const internal = await readAll(account.apiKey, ticket.uuid, 'limit=4&visibility=internal');
    expect(internal.map((m) => m.body)).toEqual(expected.filter((_, i) => i > 0 && (i - 1) % 3 === 2));
    const firstPage = await page(account.apiKey, ticket.uuid, 'limit=5');
    expect(firstPage.body.data).toHaveLength(5);
    expect(firstPage.body.next_cursor).toBe(firstPage.body.data[4].id);
    expect((await storedMessages(account.accountId, ticket.uuid)).length).toBe(23);
    for (const bad of ['limit=0', 'limit=101', 'after=msg_1', 'visibility=secret', 'limit=x']) {
      const r = await page(account.apiKey, ticket.uuid, bad);
      expect(r.status, bad).toBe(422);
    }
  });
});

describe('status rules', () => {
  it("a requester's message reopens a pending or resolved ticket (clearing resolved_at); open and in progress stay", async () => {
    const account = await accountWithAgents();
    for (const status of ['pending', 'resolved', 'in_progress', 'open'] as const) {
      const ticket = await create(account.apiKey);
      if (status !== 'open') await update(account.apiKey, ticket.uuid, { status });
      const r = await post(account.apiKey, ticket.uuid, { body: 'hello?', author: 'requester' });
      expect(r.status, r.text).toBe(201);
      expect(r.body.ticket.status, status).toBe(status === 'in_progress' ? 'in_progress' : 'open');
      expect(r.body.ticket.resolved_at, status).toBeNull();
      const counted = await list(account.apiKey, `status=${r.body.ticket.status}`);
      expect(counted.uuids).toContain(ticket.uuid);
      if (status === 'pending' || status === 'resolved') {
        expect((await list(account.apiKey, `status=${status}`)).uuids).not.toContain(ticket.uuid);
      }
    }
  });

  it("an agent's status moves the ticket in every list and count as PATCH does", async () => {
    const account = await accountWithAgents();
    const agent = account.agents[1] as { id: number };
    const ticket = await create(account.apiKey, { priority: 'high' });
    await update(account.apiKey, ticket.uuid, { assignee_id: agent.id });
    const before = await list(account.apiKey, `status=open&assignee_id=${agent.id}&priority=high`);
    expect(before.total).toBe(1);
    const r = await post(account.apiKey, ticket.uuid, { body: 'Fixed', status: 'resolved' });
    expect(r.status, r.text).toBe(201);
    expect(r.body.data.author.agent_id).toBe(agent.id);
    expect(r.body.ticket.status).toBe('resolved');
    expect(r.body.ticket.resolved_at).toBe(r.body.data.created_at);
    expect((await list(account.apiKey, `status=open&assignee_id=${agent.id}&priority=high`)).total).toBe(0);
    expect(
      (await list(account.apiKey, `status=resolved&assignee_id=${agent.id}&priority=high`)).uuids,
    ).toEqual([ticket.uuid]);
  });

  it('refuses what the contract refuses, writing nothing', async () => {
    const account = await accountWithAgents();
    const agent = account.agents[0] as { id: number };
    const ticket = await create(account.apiKey);
    const cases: [unknown, string][] = [
      [{ body: 'x' }, 'agent_id'], // an agent's message on a ticket without assignee, and no agent_id
      [{ body: 'x', agent_id: 999_999 }, 'agent_id'],
      [{ body: 'x', author: 'requester', agent_id: agent.id }, 'agent_id'],
      [{ body: 'x', author: 'requester', visibility: 'internal' }, 'visibility'],
      [{ body: 'x', author: 'requester', status: 'pending' }, 'status'],
      [{ body: 'x', agent_id: agent.id, visibility: 'internal', status: 'pending' }, 'status'],
      [{ body: 'x', agent_id: agent.id, status: 'gone' }, 'status'],
      [{ body: 'x', author: 'robot' }, 'author'],
      [{ body: 'x', visibility: 'secret', agent_id: agent.id }, 'visibility'],
      [{ body: '   ', agent_id: agent.id }, 'body'],
      [{ agent_id: agent.id }, 'body'],
      [{ body: { nested: { deeper: ['json'] } }, agent_id: agent.id }, 'body'],
      [{ body: ['a'], agent_id: agent.id }, 'body'],
      [{ body: 'x'.repeat(65_537), agent_id: agent.id }, 'body'],
      [{ body: `ok \ud800 lone`, agent_id: agent.id }, 'body'],
      [{ body: `ok \udfff`, agent_id: agent.id }, 'body'],
    ];
    for (const [body, field] of cases) {
      const r = await post(account.apiKey, ticket.uuid, body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(422);
      expect(Object.keys(r.body.errors), JSON.stringify(body).slice(0, 80)).toContain(field);
    }
    const huge = await gateway.call('POST', `/api/tickets/${ticket.uuid}/messages`, {
      key: account.apiKey,
      body: JSON.stringify({ body: 'y'.repeat(1024 * 1024 + 10), agent_id: agent.id }),
    });
    expect(huge.status).toBe(413);
    const notJson = await gateway.call('POST', `/api/tickets/${ticket.uuid}/messages`, {
      key: account.apiKey,
      body: '{"body": ',
    });
    expect(notJson.status).toBe(400);
    expect(await storedMessages(account.accountId, ticket.uuid)).toEqual([]);
    expect((await get(account.apiKey, ticket.uuid)).body.data).toEqual(ticket);
    const feed = await readFeedToEnd(gateway.call, account.apiKey, TICKET_EVENTS);
    expect(feed.events.map((e) => e.type)).toEqual(['ticket.created']);
  });

  it('keeps a body of 65,536 characters whole, 4-byte characters included', async () => {
    const account = await accountWithAgents();
    const agent = account.agents[0] as { id: number };
    const ticket = await create(account.apiKey);
    const bodies = ['a'.repeat(65_536), '😀'.repeat(32_768), '中'.repeat(65_536)];
    for (const [i, body] of bodies.entries()) {
      const r = await post(
        account.apiKey,
        ticket.uuid,
        { body, agent_id: agent.id },
        { 'Idempotency-Key': `big-${i}` },
      );
      expect(r.status, r.text.slice(0, 200)).toBe(201);
      const one = await gateway.call('GET', `/api/tickets/${ticket.uuid}/messages/${r.body.data.id}`, {
        key: account.apiKey,
      });
      expect(one.body.data.body === body).toBe(true);
      const again = await post(
        account.apiKey,
        ticket.uuid,
        { body, agent_id: agent.id },
        { 'Idempotency-Key': `big-${i}` },
      );
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.text).toBe(r.text);
    }
    expect((await storedMessages(account.accountId, ticket.uuid)).length).toBe(3);
  });

  it('refuses a message whose answer with its ticket would not fit one item, and takes a smaller one', async () => {
    const account = await accountWithAgents();
    const agent = account.agents[0] as { id: number };
    // A 192 KB description (the longest of 3-byte characters) beside a 192 KB body: 384 KB of answer.
    const ticket = await create(account.apiKey, { description: '中'.repeat(65_535) });
    const refused = await post(account.apiKey, ticket.uuid, {
      body: '中'.repeat(65_536),
      agent_id: agent.id,
    });
    expect(refused.status).toBe(422);
    expect(Object.keys(refused.body.errors)).toEqual(['body']);
    expect(await storedMessages(account.accountId, ticket.uuid)).toEqual([]);
    const taken = await post(account.apiKey, ticket.uuid, { body: 'a'.repeat(65_536), agent_id: agent.id });
    expect(taken.status, taken.text.slice(0, 200)).toBe(201);
  });

  it("an agent's message on a closed ticket is a 422 on ticket; a requester's opens a follow-up", async () => {
    const account = await createTestAccount({
      agents: agentsFile(1),
      categories: [{ name: 'Billing', slug: 'billing' }],
    });
    const agent = account.agents[0] as { id: number };
    const ticket = await create(account.apiKey, {
      subject: `${'S'.repeat(250)}${'T'.repeat(5)}`,
      priority: 'urgent',
      category_slug: 'billing',
      custom_fields: { plan: 'gold', seats: 3 },
    });
    const closed = await update(account.apiKey, ticket.uuid, { status: 'closed' });
    const refused = await post(account.apiKey, ticket.uuid, { body: 'late', agent_id: agent.id });
    expect(refused.status).toBe(422);
    expect(Object.keys(refused.body.errors)).toEqual(['ticket']);

    const r = await post(
      account.apiKey,
      ticket.uuid,
      { body: 'It is back!', author: 'requester' },
      {
        'Idempotency-Key': 'follow-up',
      },
    );
    expect(r.status, r.text).toBe(201);
    const followUp = r.body.ticket;
    expect(followUp.uuid).not.toBe(ticket.uuid);
    expect(followUp).toMatchObject({
      subject: `Re: ${ticket.subject}`.slice(0, 255),
      description: 'It is back!',
      status: 'open',
      priority: 'urgent',
      category: { slug: 'billing' },
      custom_fields: { plan: 'gold', seats: 3 },
      parent_uuid: ticket.uuid,
      requester: { name: 'Rita Requester', email: 'c@client.test' },
    });
    expect(followUp.subject).toHaveLength(255);
    expect(r.headers.get('etag')).toBe('"1"');
    expect(r.body.data).toMatchObject({
      ticket_uuid: followUp.uuid,
      author: { type: 'requester' },
      body: 'It is back!',
      created_at: followUp.created_at,
    });
    const conversation = await readAll(account.apiKey, followUp.uuid);
    expect(conversation).toEqual([r.body.data]);
    expect((await get(account.apiKey, ticket.uuid)).body.data).toEqual(closed);
    const replay = await post(
      account.apiKey,
      ticket.uuid,
      { body: 'It is back!', author: 'requester' },
      {
        'Idempotency-Key': 'follow-up',
      },
    );
    expect(replay.text).toBe(r.text);
    const feed = await readFeedToEnd(gateway.call, account.apiKey, TICKET_EVENTS);
    // The feed keeps each object's order (decisions.md, "Events"), a message's with its ticket's: the closed
    // ticket's two events, then the follow-up's creation and its first message, each pair in order.
    const ticketOf = (e: (typeof feed.events)[number]) => {
      const object = e.data.object as { uuid?: string; ticket_uuid?: string };
      return object.ticket_uuid ?? object.uuid;
    };
    const typesOf = (uuid: string) => feed.events.filter((e) => ticketOf(e) === uuid).map((e) => e.type);
    expect(feed.events).toHaveLength(4);
    expect(typesOf(ticket.uuid)).toEqual(['ticket.created', 'ticket.updated']);
    expect(typesOf(followUp.uuid)).toEqual(['ticket.created', 'message.created']);
    expect(feed.events.find((e) => e.type === 'message.created')?.data.object).toEqual(r.body.data);
    expect((await list(account.apiKey, 'status=open')).uuids).toEqual([followUp.uuid]);
  });

  it('If-Match: of two agents answering the same version, the second gets 412 and writes nothing', async () => {
    const account = await accountWithAgents();
    const [a1, a2] = account.agents as { id: number }[];
    const ticket = await create(account.apiKey);
    const etag = (await get(account.apiKey, ticket.uuid)).headers.get('etag') as string;
    const first = await post(
      account.apiKey,
      ticket.uuid,
      { body: 'I take it', agent_id: a1?.id },
      { 'If-Match': etag },
    );
    expect(first.status, first.text).toBe(201);
    const second = await post(
      account.apiKey,
      ticket.uuid,
      { body: 'Me too', agent_id: a2?.id },
      { 'If-Match': etag },
    );
    expect(second.status).toBe(412);
    const all = await readAll(account.apiKey, ticket.uuid);
    expect(all.map((m) => m.body)).toEqual(['Please', 'I take it']);
    const third = await post(
      account.apiKey,
      ticket.uuid,
      { body: 'Now me', agent_id: a2?.id },
      {
        'If-Match': first.headers.get('etag') as string,
      },
    );
    expect(third.status, third.text).toBe(201);
  });

  it("answers 404 for another account's ticket or message, and another ticket's message", async () => {
    const mine = await accountWithAgents();
    const theirs = await accountWithAgents();
    const own = await create(mine.apiKey);
    const other = await create(mine.apiKey);
    const foreign = await create(theirs.apiKey);
    const theirAgent = theirs.agents[0] as { id: number };
    const theirMessage = await post(theirs.apiKey, foreign.uuid, { body: 'secret', agent_id: theirAgent.id });
    expect(theirMessage.status).toBe(201);
    const myAgent = mine.agents[0] as { id: number };
    const myMessage = await post(mine.apiKey, own.uuid, { body: 'mine', agent_id: myAgent.id });
    for (const [method, path] of [
      ['GET', `/api/tickets/${foreign.uuid}/messages`],
      ['POST', `/api/tickets/${foreign.uuid}/messages`],
      ['GET', `/api/tickets/${foreign.uuid}/messages/${theirMessage.body.data.id}`],
      ['GET', `/api/tickets/${own.uuid}/messages/${theirMessage.body.data.id}`],
      ['GET', `/api/tickets/${other.uuid}/messages/${myMessage.body.data.id}`],
      ['GET', `/api/tickets/${other.uuid}/messages/msg_0000000001${'0'.repeat(16)}`],
      ['GET', `/api/tickets/${own.uuid}/messages/nope`],
      ['GET', '/api/tickets/TKT-999999/messages'],
    ] as const) {
      const r = await gateway.call(method, path, {
        key: mine.apiKey,
        ...(method === 'POST' ? { body: { body: 'x', agent_id: myAgent.id } } : {}),
      });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body).toEqual(NOT_FOUND);
    }
    const description = (await readAll(mine.apiKey, own.uuid))[0] as { id: string };
    const crossed = await gateway.call('GET', `/api/tickets/${other.uuid}/messages/${description.id}`, {
      key: mine.apiKey,
    });
    expect(crossed.status).toBe(404);
    expect((await readAll(theirs.apiKey, foreign.uuid)).map((m) => m.body)).toEqual(['Please', 'secret']);
  });

  it("keeps the author's name as it was when the message was written", async () => {
    const slug = `t-rename-${Date.now()}`;
    const { applyAccountFile } = await import('#lib/accounts/apply-account.ts');
    const file = { slug, name: 'Rename', plan: 'pro', rate_limit_per_minute: 1_000_000 };
    const state = await applyAccountFile({ ...file, agents: [{ email: 'old@desk.test', name: 'Old Name' }] });
    const key = state.api_key as string;
    const agentId = (state.agents[0] as { id: number }).id;
    const ticket = await create(key);
    const r = await post(key, ticket.uuid, { body: 'hi', agent_id: agentId });
    expect(r.body.data.author.name).toBe('Old Name');
    await applyAccountFile({ ...file, agents: [{ email: 'old@desk.test', name: 'New Name' }] });
    const one = await gateway.call('GET', `/api/tickets/${ticket.uuid}/messages/${r.body.data.id}`, { key });
    expect(one.body.data.author.name).toBe('Old Name');
  });
});
