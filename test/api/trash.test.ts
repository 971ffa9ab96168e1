import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { folderMailStore } from '#infra/local/mail.ts';
import { createKey } from '#lib/accounts/key-making.ts';
import { contacts } from '#lib/data/contacts/contact-index.ts';
import { deals } from '#lib/data/deals/deal-index.ts';
import { indexKeys, messageKeys } from '#lib/data/keys.ts';
import { queryInbound } from '#lib/data/mail/inbound.ts';
import { findMailId, receivedMailId } from '#lib/data/mail/message-ids.ts';
import { ackItem } from '#lib/data/outbox.ts';
import { queryAll, tableName } from '#lib/data/store/client.ts';
import { ATTR } from '#lib/data/store/items.ts';
import { tickets } from '#lib/data/tickets/ticket-index.ts';
import { duePurges, purgeOne } from '#lib/data/trash/purge.ts';
import { outboxPass } from '#lib/email/outbox.ts';
import { receiveMail } from '#lib/email/receive.ts';
import type { Sender } from '#lib/email/senders.ts';
import { createTestAccount } from '#test/support/accounts.ts';
import { withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';
import { entityItemsOf, indexSnapshot, trashItemsOf } from '#test/support/index-snapshot.ts';
import { keptMail } from '#test/support/kept-mail.ts';
import { ticketBody } from '#test/support/tickets.ts';

/**
 * Deleting, the trash and restoring (decisions.md, "Deleting, restoring and erasing"), through the API: a deleted
 * object is out of every list, total, search and sum at once (its index is exactly what a rebuild from the live
 * entities gives), its trash item holds it, and a restore puts every index item, count and sum back exactly as it
 * was (the index snapshot equals the one before the deletion).
 */
const gateway = useGateway();

/** The API as one key calls it: a method, a path and a body (none: no body). */
const callWith = (key: string) => (method: string, path: string, body?: unknown) =>
  gateway.call(method, path, { key, ...(body === undefined ? {} : { body }) });

/** The index is exactly what the live entities say: a rebuild from them changes nothing a reader sees. */
async function expectRecounted(entity: 'TICKET' | 'DEAL' | 'CONTACT', accountId: string) {
  const engine = { TICKET: tickets, DEAL: deals, CONTACT: contacts }[entity];
  const before = await indexSnapshot(entity, accountId);
  await engine.rebuild(accountId);
  expect(before).toEqual(await indexSnapshot(entity, accountId));
}

describe('tickets: delete, trash, restore', () => {
  it('a deleted ticket leaves every list, count, search and queue at once; a restore puts all of it back', async () => {
    const account = await createTestAccount({
      agents: [{ email: 'ana@trash.test', name: 'Ana' }],
    });
    const key = account.apiKey;
    const agent = account.agents[0]?.id as number;
    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      gateway.call(method, path, { key, ...(body === undefined ? {} : { body }), headers });
    const created = [];
    for (const fields of [
      { subject: 'Printer zebra jammed', priority: 'high', custom_fields: { plan: 'gold' } },
      { subject: 'Second one', requester_email: 'other@client.test' },
    ]) {
      const r = await call('POST', '/api/tickets', ticketBody(fields));
      expect(r.status, r.text).toBe(201);
      created.push(r.body.ticket);
    }
    const [doomed, kept] = created;
    await call('PATCH', `/api/tickets/${doomed.uuid}`, { assignee_id: agent, status: 'pending' });
    const reply = await call('POST', `/api/tickets/${doomed.uuid}/messages`, {
      body: 'On it',
      visibility: 'public',
    });
    expect(reply.status, reply.text).toBe(201);
    const shown = (await call('GET', `/api/tickets/${doomed.uuid}`)).body.data;
    const index0 = await indexSnapshot('TICKET', account.accountId);
    const feedStart = (await readFeedToEnd(gateway.call, key)).after;

    // A stale If-Match: 412, nothing changed.
    const stale = await call('DELETE', `/api/tickets/${doomed.uuid}`, undefined, { 'If-Match': '"1"' });
    expect(stale.status).toBe(412);
    expect(await indexSnapshot('TICKET', account.accountId)).toEqual(index0);

    const idem = { 'Idempotency-Key': 'delete-doomed' };
    const deleted = await call('DELETE', `/api/tickets/${doomed.uuid}`, undefined, idem);
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body).toEqual({
      message: 'Ticket deleted.',
      data: { uuid: doomed.uuid, deleted_at: expect.any(String), purge_at: expect.any(String) },
    });
    const { deleted_at, purge_at } = deleted.body.data;
    expect(Date.parse(purge_at) - Date.parse(deleted_at)).toBe(30 * 86_400_000);
    // The same key replays the answer and writes nothing more.
    const replay = await call('DELETE', `/api/tickets/${doomed.uuid}`, undefined, idem);
    expect(replay.body).toEqual(deleted.body);

    for (const [method, path, body] of [
      ['GET', `/api/tickets/${doomed.uuid}`, undefined],
      ['DELETE', `/api/tickets/${doomed.reference}`, undefined],
      ['GET', `/api/tickets/${doomed.reference}`, undefined],
      ['PATCH', `/api/tickets/${doomed.uuid}`, { priority: 'low' }],
      ['DELETE', `/api/tickets/${doomed.uuid}`, undefined],
      ['POST', `/api/tickets/${doomed.uuid}/messages`, { body: 'late', visibility: 'public' }],
    ] as const) {
      expect((await call(method, path, body)).status, `${method} ${path}`).toBe(404);
    }
    for (const query of [
      '',
      'status=pending',
      'priority=high',
      `assignee_id=${agent}`,
      'search=zebra',
      `search=${doomed.number}`,
      'requester_email=c@client.test',
      'custom_fields[plan]=gold',
      'sort=due',
      `status=pending&assignee_id=${agent}`,
    ]) {
      const page = await call('GET', `/api/tickets?${query}`);
      expect(page.status, query).toBe(200);
      expect(
        page.body.data.map((t: { uuid: string }) => t.uuid),
        query,
      ).not.toContain(doomed.uuid);
      expect(page.body.meta.total, query).toBe(query === '' || query === 'sort=due' ? 1 : 0);
    }
    await expectRecounted('TICKET', account.accountId);
    // Its messages stay (until the purge); the entity item is gone, the trash item holds the ticket.
    const messages = await queryAll({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': messageKeys.partition(account.accountId, doomed.uuid) },
    });
    expect(messages.length).toBeGreaterThan(0);
    expect((await entityItemsOf('TICKET', account.accountId)).map((i) => i.uuid)).toEqual([kept.uuid]);
    expect((await trashItemsOf(account.accountId)).map((i) => i.uuid)).toEqual([doomed.uuid]);

    const trash = await call('GET', '/api/trash');
    expect(trash.status, trash.text).toBe(200);
    expect(trash.body).toEqual({
      data: [{ uuid: doomed.uuid, type: 'ticket', title: 'Printer zebra jammed', deleted_at, purge_at }],
      next_cursor: null,
    });
    expect((await call('GET', '/api/trash?type=deal')).body.data).toEqual([]);

    const restored = await call('POST', `/api/trash/${doomed.uuid}/restore`, {});
    expect(restored.status, restored.text).toBe(200);
    expect(restored.body).toEqual({ message: 'Ticket restored.', data: shown });
    const again = await call('GET', `/api/tickets/${doomed.uuid}`);
    expect(again.body.data).toEqual(shown);
    expect(restored.headers.get('etag')).toBe(again.headers.get('etag'));
    expect(await indexSnapshot('TICKET', account.accountId)).toEqual(index0);
    expect(await trashItemsOf(account.accountId)).toEqual([]);
    expect((await call('POST', `/api/trash/${doomed.uuid}/restore`, {})).status).toBe(404);

    const events = (await readFeedToEnd(gateway.call, key, { after: feedStart })).events;
    expect(events.map((e) => e.type)).toEqual(['ticket.deleted', 'ticket.restored']);
    expect(events[0]?.data.object).toEqual(shown);
    expect(events[1]?.data.object).toEqual(shown);
  });
});

describe('a deletion whose search terms do not fit its commit', () => {
  it('answers 200 when deleting the rest after its commit fails: out of lists and search, the rest purged with it', async () => {
    const account = await createTestAccount();
    const call = callWith(account.apiKey);
    const empty = await indexSnapshot('TICKET', account.accountId);
    // 80 two-letter words, none a prefix of another: more search terms than the deletion's commit holds.
    const words = Array.from({ length: 80 }, (_, i) =>
      String.fromCharCode(97 + Math.floor(i / 26), 97 + (i % 26)),
    );
    const made = await call('POST', '/api/tickets', ticketBody({ subject: words.join(' ') }));
    expect(made.status, made.text).toBe(201);
    const { uuid } = made.body.ticket;

    // The commit lands; the BatchWriteItem after it, deleting the terms it did not hold (marked before it), fails.
    const { result: deleted, operations } = await withFault(
      { operation: 'BatchWriteItem', after: 'TransactWriteItems', mode: 'lost-request' },
      () => call('DELETE', `/api/tickets/${uuid}`),
    );
    expect(operations.slice(operations.lastIndexOf('TransactWriteItems'))).toContain('BatchWriteItem');
    expect(deleted.status, deleted.text).toBe(200);

    expect((await trashItemsOf(account.accountId)).map((i) => i.uuid)).toEqual([uuid]);
    expect((await call('GET', `/api/tickets/${uuid}`)).status).toBe(404);
    for (const query of ['', `search=${words[0]}`, `search=${words[79]}`]) {
      const page = await call('GET', `/api/tickets?${query}`);
      expect(page.status, query).toBe(200);
      expect([page.body.data, page.body.meta.total], query).toEqual([[], 0]);
    }
    // What was left: terms marked unconfirmed (readers skip them), which the ticket's purge deletes.
    const terms = new Set(indexKeys('TICKET').termsPartitions(account.accountId));
    const left = Object.entries(await indexSnapshot('TICKET', account.accountId)).filter(([item]) =>
      terms.has(item.split(' ')[0] as string),
    );
    expect(left.length).toBeGreaterThan(0);
    const marks = left.map(([, values]) => (values as Record<string, unknown>)[ATTR.unconfirmed]);
    expect(new Set(marks)).toEqual(new Set([1]));
    const purgeAt = Date.parse(deleted.body.data.purge_at);
    expect(await purgeOne(account.accountId, uuid, purgeAt * 1000 + 1000)).toBeDefined();
    expect(await indexSnapshot('TICKET', account.accountId)).toEqual(empty);
  });
});

describe('deals and contacts: delete, trash, restore', () => {
  it('board sums and open_deals_count follow; a contact with deals is a 409; a deal waits for its contact', async () => {
    const account = await createTestAccount();
    const call = callWith(account.apiKey);
    const contact = {
      contact_email: 'nora@client.test',
      contact_first_name: 'Nora',
      contact_last_name: 'New',
    };
    const big = (await call('POST', '/api/deals', { name: 'Big', amount: '1200.10', ...contact })).body.data;
    const small = (await call('POST', '/api/deals', { name: 'Small', amount: 0.3, ...contact })).body.data;
    const pipeline = (await call('GET', '/api/pipelines')).body.data[0].id;
    const board0 = (await call('GET', `/api/pipelines/${pipeline}/board`)).body.data;
    const deals0 = await indexSnapshot('DEAL', account.accountId);
    const contacts0 = await indexSnapshot('CONTACT', account.accountId);
    const contactUuid = big.contact.uuid;
    const contact0 = (await call('GET', `/api/contacts/${contactUuid}`)).body.data;
    expect(contact0.open_deals_count).toBe(2);

    const hasTwo = await call('DELETE', `/api/contacts/${contactUuid}`);
    expect(hasTwo.status).toBe(409);
    expect(hasTwo.body).toEqual({ message: 'The contact has 2 deals: delete or move them first.' });

    expect((await call('DELETE', `/api/deals/${big.uuid}`)).status).toBe(200);
    const board1 = (await call('GET', `/api/pipelines/${pipeline}/board`)).body.data;
    expect(board1.stages[0]).toMatchObject({ count: 1, totals: [{ currency: 'EUR', amount: 0.3 }] });
    expect((await call('GET', `/api/contacts/${contactUuid}`)).body.data.open_deals_count).toBe(1);
    expect((await call('GET', '/api/deals?search=big')).body.meta.total).toBe(0);
    expect((await call('GET', `/api/deals/${big.uuid}`)).status).toBe(404);
    await expectRecounted('DEAL', account.accountId);

    expect((await call('DELETE', `/api/contacts/${contactUuid}`)).body.message).toBe(
      'The contact has 1 deal: delete or move them first.',
    );
    expect((await call('DELETE', `/api/deals/${small.uuid}`)).status).toBe(200);
    const gone = await call('DELETE', `/api/contacts/${contactUuid}`);
    expect(gone.status, gone.text).toBe(200);
    expect(gone.body.message).toBe('Contact deleted.');
    expect((await call('GET', '/api/contacts?search=nora')).body.meta.total).toBe(0);
    await expectRecounted('CONTACT', account.accountId);

    const trash = (await call('GET', '/api/trash?limit=2')).body;
    expect(trash.data.map((t: { type: string; title: string }) => [t.type, t.title])).toEqual([
      ['contact', 'Nora New'],
      ['deal', 'Small'],
    ]);
    const rest = (await call('GET', `/api/trash?limit=2&after=${encodeURIComponent(trash.next_cursor)}`))
      .body;
    expect(rest).toEqual({
      data: [expect.objectContaining({ uuid: big.uuid, title: 'Big' })],
      next_cursor: null,
    });
    expect((await call('GET', '/api/trash?type=contact')).body.data).toHaveLength(1);
    expect((await call('GET', '/api/trash?type=nope')).status).toBe(422);
    expect((await call('GET', '/api/trash?after=x')).status).toBe(422);

    const waits = await call('POST', `/api/trash/${big.uuid}/restore`, {});
    expect(waits.status).toBe(409);
    expect(waits.body.message).toBe("The deal's contact is in the trash: restore the contact first.");
    const back = await call('POST', `/api/trash/${contactUuid}/restore`, {});
    expect(back.status, back.text).toBe(200);
    expect(back.body).toEqual({ message: 'Contact restored.', data: { ...contact0, open_deals_count: 0 } });
    for (const deal of [big, small]) {
      const r = await call('POST', `/api/trash/${deal.uuid}/restore`, {});
      expect(r.status, r.text).toBe(200);
      expect(r.body.message).toBe('Deal restored.');
    }
    expect((await call('GET', `/api/pipelines/${pipeline}/board`)).body.data).toEqual(board0);
    expect((await call('GET', `/api/contacts/${contactUuid}`)).body.data).toEqual(contact0);
    expect(await indexSnapshot('DEAL', account.accountId)).toEqual(deals0);
    expect(await indexSnapshot('CONTACT', account.accountId)).toEqual(contacts0);
  });

  it('the trash follows the key: <type>:read per type listed, <type>:write of the object restored', async () => {
    const account = await createTestAccount();
    const ticket = await gateway.call('POST', '/api/tickets', { key: account.apiKey, body: ticketBody() });
    const uuid = ticket.body.ticket.uuid;
    expect((await gateway.call('DELETE', `/api/tickets/${uuid}`, { key: account.apiKey })).status).toBe(200);
    const keyWith = async (scopes: string[]) =>
      (await createKey(account.accountId, { name: scopes.join(' '), scopes: scopes as never })).api_key;
    const dealsOnly = await keyWith(['deals:write']);
    const ticketsRead = await keyWith(['tickets:read']);
    expect((await gateway.call('GET', '/api/trash?type=deal', { key: dealsOnly })).status).toBe(200);
    const all = await gateway.call('GET', '/api/trash', { key: dealsOnly });
    expect(all.status).toBe(403);
    expect(all.body).toEqual({ message: 'This key lacks the scope tickets:read.' });
    expect((await gateway.call('GET', '/api/trash?type=ticket', { key: dealsOnly })).status).toBe(403);
    expect((await gateway.call('GET', '/api/trash?type=ticket', { key: ticketsRead })).status).toBe(200);
    const restore = (k: string) => gateway.call('POST', `/api/trash/${uuid}/restore`, { key: k, body: {} });
    expect((await restore(ticketsRead)).status).toBe(403);
    const wrongType = await restore(dealsOnly);
    expect(wrongType.status).toBe(403);
    expect(wrongType.body).toEqual({ message: 'This key lacks the scope tickets:write.' });
    expect((await restore(await keyWith(['tickets:write']))).status).toBe(200);
  });
});

describe('the purge', () => {
  it('finds what is due by its due entry and removes it and all it owns; a restore then answers 404', async () => {
    const account = await createTestAccount({ agents: [{ email: 'ana@purge.test', name: 'Ana' }] });
    const key = account.apiKey;
    const agent = account.agents[0]?.id as number;
    const empty = await indexSnapshot('TICKET', account.accountId);
    const ticket = (
      await gateway.call('POST', '/api/tickets', { key, body: ticketBody({ subject: 'Purge me' }) })
    ).body.ticket;
    for (let i = 0; i < 3; i++) {
      const m = await gateway.call('POST', `/api/tickets/${ticket.uuid}/messages`, {
        key,
        body: { body: `reply ${i}`, visibility: 'public', agent_id: agent },
      });
      expect(m.status, m.text).toBe(201);
    }
    const deleted = await gateway.call('DELETE', `/api/tickets/${ticket.uuid}`, { key });
    const purgeAt = Date.parse(deleted.body.data.purge_at);
    const messages = () =>
      queryAll({
        TableName: tableName(),
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': messageKeys.partition(account.accountId, ticket.uuid) },
        ConsistentRead: true,
      });
    expect(await messages()).toHaveLength(3);
    // Not due a moment before its time; due at it.
    expect(await purgeOne(account.accountId, ticket.uuid, purgeAt * 1000 - 1_000_000)).toBeUndefined();
    const due = await duePurges(purgeAt + 1, 10_000);
    expect(due).toContainEqual({ accountId: account.accountId, uuid: ticket.uuid });
    // Its 3 messages and its trash item; and, its requester's address being in no other ticket, what that address
    // left in the index (a counter shard, the directory entry; an address keeps no blocks).
    expect(await purgeOne(account.accountId, ticket.uuid, purgeAt * 1000 + 1000)).toEqual({
      items: 6,
      messages: 3,
      mailFiles: 0,
    });
    expect(await messages()).toEqual([]);
    expect(await trashItemsOf(account.accountId)).toEqual([]);
    expect(await entityItemsOf('TICKET', account.accountId)).toEqual([]);
    expect(await indexSnapshot('TICKET', account.accountId)).toEqual(empty);
    expect(await duePurges(purgeAt + 1, 10_000)).not.toContainEqual({
      accountId: account.accountId,
      uuid: ticket.uuid,
    });
    const restore = await gateway.call('POST', `/api/trash/${ticket.uuid}/restore`, { key, body: {} });
    expect(restore.status).toBe(404);
    // A purge found again (a crash after it) removes nothing more.
    expect(await purgeOne(account.accountId, ticket.uuid, purgeAt * 1000 + 1000)).toBeUndefined();
  });
  it("takes a ticket's mail with it: its acknowledgement, its inbound log entries and every Message-ID it claimed or sent", async () => {
    const address = `support@p${randomBytes(4).toString('hex')}.test`;
    const account = await createTestAccount({
      agents: [{ email: 'ana@purge.test', name: 'Ana' }],
      email: { addresses: [address], acknowledge: true },
    });
    const dir = await mkdtemp(join(tmpdir(), 'deskpipe-purge-mail-'));
    await mkdir(join(dir, 'raw'), { recursive: true });
    const keep = (headers: string) => keptMail(dir, address, headers);
    try {
      // A mail opens the ticket (acknowledged); a second, with no Message-ID of its own, threads by its subject.
      const opener = `open-${randomBytes(4).toString('hex')}@customer.test`;
      await receiveMail(
        await keep(`Subject: Printer on fire\r\nMessage-ID: <${opener}>\r\n`),
        folderMailStore(dir),
      );
      const [opened] = await queryInbound(account.accountId, undefined, 1);
      const uuid = opened?.ticketUuid as string;
      const ticket = (await gateway.call('GET', `/api/tickets/${uuid}`, { key: account.apiKey })).body.data;
      const idless = await keep(`Subject: Re: [${ticket.reference}] Printer on fire\r\n`);
      const [threaded] = await receiveMail(idless, folderMailStore(dir));
      expect(threaded?.ticketUuid).toBe(uuid);
      const reply = await gateway.call('POST', `/api/tickets/${uuid}/messages`, {
        key: account.apiKey,
        body: { body: 'On our way.', visibility: 'public', agent_id: account.agents[0]?.id },
      });
      // The outbox sends the acknowledgement and the reply; the provider gives each an id of its own.
      const relay: Sender = {
        name: 'test relay',
        send: async (mail) => ({ ok: true, providerMessageId: `prov-${mail.messageId}` }),
        close: () => undefined,
      };
      expect((await outboxPass({ sender: relay })).counts).toMatchObject({ sent: 2 });
      const ack = (await ackItem(account.accountId, uuid))?.email as { message_id: string };
      const sentIds = [ack.message_id, reply.body.data.email.message_id as string];
      const ids = [
        opener,
        receivedMailId(undefined, idless.inboundId),
        ...sentIds,
        ...sentIds.map((id) => `prov-${id}`),
      ];
      for (const id of ids) expect(await findMailId(account.accountId, id), id).toBeDefined();
      expect(
        (await queryInbound(account.accountId, undefined, 100)).filter((e) => e.ticketUuid === uuid),
      ).toHaveLength(2);

      const deleted = await gateway.call('DELETE', `/api/tickets/${uuid}`, { key: account.apiKey });
      const purgeAt = Date.parse(deleted.body.data.purge_at);
      // Its messages: the mail that threaded and the reply (the opening mail is the ticket's description).
      expect(await purgeOne(account.accountId, uuid, purgeAt * 1000 + 1000)).toMatchObject({ messages: 2 });
      for (const id of ids) expect(await findMailId(account.accountId, id), id).toBeUndefined();
      expect(await ackItem(account.accountId, uuid)).toBeUndefined();
      // The inbound log's entries of its two mails went with it; the log holds no entry naming the ticket.
      expect(
        (await queryInbound(account.accountId, undefined, 100)).filter((e) => e.ticketUuid === uuid),
      ).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
