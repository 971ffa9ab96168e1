import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyResult } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { handler as getEventHandler } from '#functions/events-get.ts';
import { handler as listEventsHandler } from '#functions/events-list.ts';
import { applyAccountFile } from '#lib/accounts/apply-account.ts';
import { eventShardOfObject, settleEventPlaces, takeEventPlaces } from '#lib/data/events.ts';
import { EVENT_SHARDS, eventKeys } from '#lib/data/keys.ts';
import { dynamo, queryAll, tableName } from '#lib/data/store/client.ts';
import { ConcurrentWrite } from '#lib/data/store/errors.ts';
import { commit } from '#lib/data/store/transact.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { objectsInEveryShard } from '#test/support/event-shards.ts';
import { callerOf, lambdaContext, proxyEvent } from '#test/support/events.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { countRoundTrips } from '#test/support/round-trips.ts';

/** The events feed (decisions.md, "Events"): one event per change, in the change's own transaction. */
const gateway = useGateway();

async function setUp() {
  const account = await createTestAccount({
    contacts: [{ email: 'kim@client.test', first_name: 'Kim', last_name: 'Known' }],
  });
  const key = account.apiKey;
  const call = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
    gateway.call(method, path, {
      key,
      ...(body !== undefined ? { body } : {}),
      ...(headers ? { headers } : {}),
    });
  const feed = (options: Parameters<typeof readFeedToEnd>[2] = {}) =>
    readFeedToEnd(gateway.call, key, { limit: 100, ...options });
  return { account, key, call, feed };
}

const ticketBody = { subject: 'Printer on fire', description: 'Smoke.', requester_email: 'ann@client.test' };

describe('events of changes', () => {
  it('records a ticket create and update as their GETs answer them, with previous and version', async () => {
    const { call, feed } = await setUp();
    const before = await feed();
    const created = await call('POST', '/api/tickets', ticketBody);
    expect(created.status).toBe(201);
    const uuid = created.body.ticket.uuid;
    const afterCreate = await call('GET', `/api/tickets/${uuid}`);
    const patched = await call('PATCH', `/api/tickets/${uuid}`, {
      priority: 'urgent',
      subject: 'Printer out',
    });
    expect(patched.status).toBe(200);
    const afterPatch = await call('GET', `/api/tickets/${uuid}`);

    const { events } = await feed({ after: before.events.at(-1)?.id });
    expect(events.map((e) => e.type)).toEqual(['ticket.created', 'ticket.updated']);
    const [c, u] = events;
    expect(c?.data).toEqual({ object: afterCreate.body.data, version: 1 });
    expect(u?.data.object).toEqual(afterPatch.body.data);
    expect(u?.data.version).toBe(2);
    expect(afterPatch.headers.get('etag')).toBe('"2"');
    const was = afterCreate.body.data;
    expect(u?.data.previous).toEqual({
      priority: was.priority,
      subject: was.subject,
      updated_at: was.updated_at,
    });
    // One event, by id, as the feed has it.
    const one = await call('GET', `/api/events/${u?.id}`);
    expect(one.status).toBe(200);
    expect(one.body.data).toEqual(u);
  });

  it('writes no event for a replayed Idempotency-Key, an unchanged PATCH or a refused request', async () => {
    const { call, feed } = await setUp();
    const headers = { 'Idempotency-Key': 'evt-replay-1' };
    const first = await call('POST', '/api/tickets', ticketBody, headers);
    expect(first.status).toBe(201);
    const mark = (await feed()).events.at(-1)?.id;
    const replay = await call('POST', '/api/tickets', ticketBody, headers);
    expect(replay.status).toBe(201);
    expect(replay.body.ticket.uuid).toBe(first.body.ticket.uuid);
    const uuid = first.body.ticket.uuid;
    expect((await call('PATCH', `/api/tickets/${uuid}`, { subject: ticketBody.subject })).status).toBe(200);
    expect((await call('PATCH', `/api/tickets/${uuid}`, { priority: 'nope' })).status).toBe(422);
    expect(
      (await call('PATCH', `/api/tickets/${uuid}`, { priority: 'low' }, { 'If-Match': '"7"' })).status,
    ).toBe(412);
    expect(
      (await call('POST', '/api/deals', { name: 'x', amount: -1, contact_email: 'a@b.test' })).status,
    ).toBe(422);
    expect((await feed({ after: mark })).events).toEqual([]);
  });

  it('records deals, their new contacts, contact changes and the account file changes', async () => {
    const { account, call, feed } = await setUp();
    const mark = (await feed()).events.at(-1)?.id;
    const deal = await call('POST', '/api/deals', {
      name: 'Annual',
      amount: 1200.5,
      currency: 'EUR',
      contact_email: 'nora@client.test',
      contact_first_name: 'Nora',
    });
    expect(deal.status).toBe(201);
    const moved = await call('PATCH', `/api/deals/${deal.body.data.uuid}`, { status: 'won' });
    expect(moved.status).toBe(200);
    const contactUuid = deal.body.data.contact.uuid;
    const renamed = await call('PATCH', `/api/contacts/${contactUuid}`, { last_name: 'North' });
    expect(renamed.status).toBe(200);
    // The admin command line: the account file changes Kim's phone and adds Lee.
    await applyAccountFile({
      slug: account.slug,
      name: account.account.name,
      plan: 'pro',
      rate_limit_per_minute: 1_000_000,
      contacts: [
        { email: 'kim@client.test', first_name: 'Kim', last_name: 'Known', phone: '+1 555 0100' },
        { email: 'lee@client.test', first_name: 'Lee' },
      ],
    });

    const { events } = await feed({ after: mark });
    // Each object's events in the order of its changes (decisions.md); objects' events interleave by their shards'
    // places (a deal and the contact it creates share one: theirs are in commit order).
    const of = (uuid: string) => events.filter((e) => e.data.object.uuid === uuid).map((e) => e.type);
    const dealUuid = deal.body.data.uuid as string;
    const byUuid = (email: string) =>
      events.find((e) => e.data.object.email === email)?.data.object.uuid as string;
    expect(events).toHaveLength(6);
    expect(of(contactUuid)).toEqual(['contact.created', 'contact.updated']);
    expect(of(dealUuid)).toEqual(['deal.created', 'deal.updated']);
    expect(of(byUuid('lee@client.test'))).toEqual(['contact.created']);
    expect(of(byUuid('kim@client.test'))).toEqual(['contact.updated']);
    const inDealShard = events.filter((e) => [contactUuid, dealUuid].includes(e.data.object.uuid as string));
    expect(inDealShard.map((e) => e.type)).toEqual([
      'contact.created',
      'deal.created',
      'deal.updated',
      'contact.updated',
    ]);
    const [contactCreated, dealCreated, dealUpdated, contactUpdated] = inDealShard;
    const lee = events.find((e) => e.data.object.email === 'lee@client.test');
    const kim = events.find((e) => e.data.object.email === 'kim@client.test');
    expect(contactCreated?.data.object).toMatchObject({ email: 'nora@client.test', open_deals_count: 1 });
    const dealNow = await call('GET', `/api/deals/${deal.body.data.uuid}`);
    expect(dealUpdated?.data.object).toEqual({
      ...dealNow.body.data,
      contact: dealUpdated?.data.object.contact,
    });
    expect(dealCreated?.data.version).toBe(1);
    expect(dealUpdated?.data).toMatchObject({ version: 2, previous: { status: 'open', won_at: null } });
    expect(contactUpdated?.data).toMatchObject({
      version: 2,
      previous: { last_name: null, full_name: 'Nora' },
    });
    const contactNow = await call('GET', `/api/contacts/${contactUuid}`);
    expect(contactUpdated?.data.object).toEqual({ ...contactNow.body.data, open_deals_count: 0 });
    expect(lee?.data.object).toMatchObject({ email: 'lee@client.test', first_name: 'Lee' });
    expect(kim?.data).toMatchObject({ previous: { phone: null }, object: { phone: '+1 555 0100' } });
  });
});

describe('GET /api/events', () => {
  it('pages with next_cursor, resumes from any id, and filters by type and wildcard', async () => {
    const { call, feed } = await setUp();
    for (let i = 0; i < 3; i++) expect((await call('POST', '/api/tickets', ticketBody)).status).toBe(201);
    const deal = await call('POST', '/api/deals', {
      name: 'D',
      amount: 10,
      contact_email: 'kim@client.test',
    });
    expect(deal.status).toBe(201);
    const all = (await feed({ limit: 100 })).events;
    const paged = (await feed({ limit: 2 })).events;
    expect(paged).toEqual(all);
    for (const [i, event] of all.entries()) {
      expect((await feed({ after: event.id, limit: 3 })).events).toEqual(all.slice(i + 1));
    }
    const tickets = (await feed({ types: ['ticket.*'], limit: 2 })).events;
    expect(tickets).toEqual(all.filter((e) => e.type.startsWith('ticket.')));
    const both = (await feed({ types: ['deal.created', 'contact.updated'] })).events;
    expect(both).toEqual(all.filter((e) => e.type === 'deal.created' || e.type === 'contact.updated'));
    const end = await call('GET', `/api/events?after=${all.at(-1)?.id}`);
    expect(end.body).toEqual({ data: [], next_cursor: null });
  });

  it("answers 422 naming the parameter for a bad after, limit or type, and 404 for another account's event", async () => {
    const { call } = await setUp();
    const other = await setUp();
    expect((await other.call('POST', '/api/tickets', ticketBody)).status).toBe(201);
    const theirs = (await other.feed()).events.at(-1)?.id as string;
    expect((await call('POST', '/api/tickets', ticketBody)).status).toBe(201);
    const cases: [string, string][] = [
      ['after=nope', 'after'],
      ['after=evt_00000000010123456789', 'after'],
      [`after=${theirs}`, 'after'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['type=ticket.archived', 'type'],
      ['type=ticket.created&type=tickets.*', 'type'],
    ];
    for (const [query, field] of cases) {
      const r = await call('GET', `/api/events?${query}`);
      expect(r.status, query).toBe(422);
      expect(Object.keys(r.body.errors), query).toEqual([field]);
    }
    expect((await call('GET', `/api/events/${theirs}`)).status).toBe(404);
    expect((await call('GET', '/api/events/evt_nope')).status).toBe(404);
    expect((await other.call('GET', `/api/events/${theirs}`)).status).toBe(200);
  });
});

describe('open places', () => {
  it('holds the feed at a place whose commit is pending, and goes on once its writer closes it', async () => {
    const { account, call, feed } = await setUp();
    const mark = (await feed()).events.at(-1)?.id;
    // A pending place in every shard: whichever shard the ticket's events go to, one is below its event.
    const drafts = objectsInEveryShard('pending').map((object) => ({
      type: 'ticket.created',
      object,
      version: 1,
    }));
    const pending = await takeEventPlaces(account.accountId, drafts);
    expect((await call('POST', '/api/tickets', ticketBody)).status).toBe(201);
    expect((await feed({ after: mark })).events).toEqual([]);
    expect(await settleEventPlaces(account.accountId, pending.seqs)).toBe(true);
    expect((await feed({ after: mark })).events.map((e) => e.type)).toEqual(['ticket.created']);
  });

  it('closes a place older than any living writer, and the late commit then fails whole', async () => {
    const { account, call, feed } = await setUp();
    const mark = (await feed()).events.at(-1)?.id;
    // An open place in every shard: whichever shard the ticket's events go to, one is below its event.
    const drafts = objectsInEveryShard('late').map((object) => ({
      type: 'ticket.created',
      object,
      version: 1,
    }));
    const late = await takeEventPlaces(account.accountId, drafts);
    const made = await call('POST', '/api/tickets', ticketBody);
    expect(made.status).toBe(201);
    // The open places were taken 11 s ago, as far as the reader can tell: each shard's last take, and the event
    // after the open place in the ticket's shard.
    const age = (Key: Record<string, unknown>) =>
      dynamo.send(
        new UpdateCommand({
          TableName: tableName(),
          Key,
          UpdateExpression: 'SET #at = :at',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#at': 'at' },
          ExpressionAttributeValues: { ':at': Date.now() - 11_000 },
        }),
      );
    for (let shard = 0; shard < EVENT_SHARDS; shard++) await age(eventKeys.counter(account.accountId, shard));
    const shard = eventShardOfObject(made.body.ticket);
    const [ticketEvent] = await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      FilterExpression: '#type = :event',
      ExpressionAttributeNames: { '#type': 'type' },
      ExpressionAttributeValues: {
        ':pk': eventKeys.shardPartition(account.accountId, shard),
        ':event': 'event',
      },
      ScanIndexForward: false,
      ConsistentRead: true,
    });
    await age({ pk: ticketEvent?.pk, sk: ticketEvent?.sk });
    expect((await feed({ after: mark })).events.map((e) => e.type)).toEqual(['ticket.created']);
    await expect(commit(late.actions)).rejects.toBeInstanceOf(ConcurrentWrite);
    // Whole: the late event did not land either.
    expect((await feed({ after: mark })).events.map((e) => e.type)).toEqual(['ticket.created']);
  });
});

describe('a run of void places', () => {
  it('is read past at any limit: 40 failed commits in a row between two events hold no reader', async () => {
    const { account, call, feed } = await setUp();
    const made = await call('POST', '/api/tickets', ticketBody);
    expect(made.status).toBe(201);
    const first = (await feed()).events.at(-1)?.id;
    // 40 commits of the ticket (so in its shard, in a row) that took their places and failed, each closed by its
    // writer, then its next change's event, in the same shard.
    const object = (await call('GET', `/api/tickets/${made.body.ticket.uuid}`)).body.data;
    const draft = { type: 'ticket.created', object, version: 1 };
    const failed = await takeEventPlaces(
      account.accountId,
      Array.from({ length: 40 }, () => draft),
    );
    expect(await settleEventPlaces(account.accountId, failed.seqs)).toBe(true);
    const next = await takeEventPlaces(account.accountId, [draft]);
    await commit(next.actions);
    for (const limit of [1, 2, 5, 100]) {
      const after = await feed({ after: first, limit });
      expect(
        after.events.map((e) => e.type),
        `limit ${limit}`,
      ).toEqual(['ticket.created']);
    }
    // The page that passes only voids answers a cursor past them, which names no event.
    const voidsOnly = await call('GET', `/api/events?after=${first}&limit=1`);
    expect(voidsOnly.body.data).toEqual([]);
    const cursor = voidsOnly.body.next_cursor as string;
    expect(cursor).toMatch(/^evt_/);
    expect((await call('GET', `/api/events/${cursor}`)).status).toBe(404);
  });
});

describe('refused creates', () => {
  it('a deal refused for a missing contact_first_name gives up its place: the next event is not held', async () => {
    const { call, feed } = await setUp();
    const mark = (await feed()).events.at(-1)?.id;
    const refused = await call('POST', '/api/deals', {
      name: 'D',
      amount: 1,
      contact_email: 'new@client.test',
    });
    expect(refused.status).toBe(422);
    expect((await call('POST', '/api/tickets', ticketBody)).status).toBe(201);
    expect((await feed({ after: mark })).events.map((e) => e.type)).toEqual(['ticket.created']);
  });
});

describe('round trips of the feed', () => {
  it('a page is one Query whatever it holds (the rate count beside it), one event one Query', async () => {
    const { account, call, feed } = await setUp();
    for (let i = 0; i < 12; i++) expect((await call('POST', '/api/tickets', ticketBody)).status).toBe(201);
    const events = (await feed()).events;
    const caller = callerOf(account);
    const list = (query: Record<string, string>) =>
      countRoundTrips(
        () =>
          listEventsHandler(
            proxyEvent({ path: '/api/events', caller, query }),
            lambdaContext,
          ) as Promise<APIGatewayProxyResult>,
      );
    const queries: Record<string, string>[] = [
      { limit: '5' },
      { after: events[2]?.id as string, limit: '5' },
      { after: events.at(-2)?.id as string, limit: '50' },
      { after: events.at(-1)?.id as string },
      { type: 'deal.*', limit: '100' },
    ];
    for (const query of queries) {
      const { result, roundTrips, calls } = await list(query);
      expect(result.statusCode, result.body).toBe(200);
      expect(roundTrips, `${JSON.stringify(query)}: ${calls.join(', ')}`).toBe(1);
    }
    const one = await countRoundTrips(
      () =>
        getEventHandler(
          {
            ...proxyEvent({ path: `/api/events/${events[0]?.id}`, caller }),
            pathParameters: { event: events[0]?.id as string },
          },
          lambdaContext,
        ) as Promise<APIGatewayProxyResult>,
    );
    expect(one.result.statusCode).toBe(200);
    expect(one.roundTrips, one.calls.join(', ')).toBe(1);
  });
});
