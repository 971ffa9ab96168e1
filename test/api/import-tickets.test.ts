import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MailServer, startMailServer } from '#infra/local/mail.ts';
import { reserveIds } from '#lib/data/accounts/accounts.ts';
import { createContact, newContactUuid } from '#lib/data/contacts/contacts.ts';
import { claimSourceKey } from '#lib/data/imports/source-keys.ts';
import { OUTBOX_ATTR } from '#lib/data/outbox/item.ts';
import { scanAll, tableName } from '#lib/data/store/client.ts';
import { commit } from '#lib/data/store/transact.ts';
import type { ImportedMessage, ImportedTicket, ImportRecord } from '#lib/imports/records.ts';
import { writeTickets } from '#lib/imports/tickets.ts';
import type { ImportContext } from '#lib/imports/writing.ts';
import { breachPass } from '#lib/tickets/breaches.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { withFault } from '#test/support/faults.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The import writer of tickets (issue 42; decisions.md, "Imports"): a page of source tickets written faithfully
 * (times, statuses, people, visibility, references in creation order), found by GET, lists, totals and search at
 * once; keyed (again: unchanged; changed: updated; twice at once: once); silent (no outbox, no breach event for a
 * past due time, every event with import_id); a reply to an imported mail threads in; validate writes nothing.
 */
const gateway = useGateway();
const clock = useManualClock();
// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;
const HOUR = 3_600_000_000;

async function account() {
  const address = `support@i${randomBytes(5).toString('hex')}.test`;
  const a = await createTestAccount({
    ticket_prefix: 'IM',
    agents: agentsFile(2),
    email: { addresses: [address] },
    sla_policies: [{ name: 'Standard', first_reply_minutes: 60, resolution_minutes: 10_000 }],
  });
  const agents = a.agents as { id: number }[];
  // The people phase's keys (lib/imports/people.ts writes them): agents a1, a2.
  await commit(
    agents.map((agent, i) =>
      claimSourceKey(
        a.accountId,
        { source: 'zendesk', type: 'agents', sourceId: `a${i + 1}` },
        { objectId: agent.id, importId: 'imp_people', matched: false, digest: 'd' },
      ),
    ),
  );
  return { ...a, address, agentIds: agents.map((x) => x.id) };
}

const ctxOf = (a: TestAccount, validate = false): ImportContext => ({
  accountId: a.accountId,
  importId: 'imp_test',
  source: 'zendesk',
  validate,
});

const ago = (hours: number) => formatTimestamp(nowMicros() - hours * HOUR);
const msg = (sourceId: string, hoursAgo: number, over: Partial<ImportedMessage> = {}): ImportedMessage => ({
  sourceId,
  author: { kind: 'contact', sourceId: 'c1' },
  body: `body of ${sourceId}`,
  internal: false,
  createdAt: ago(hoursAgo),
  messageId: null,
  attachments: [],
  ...over,
});
const agentSays = (sourceId: string, hoursAgo: number, over: Partial<ImportedMessage> = {}) =>
  msg(sourceId, hoursAgo, { author: { kind: 'agent', sourceId: 'a1' }, ...over });

function ticket(sourceId: string, hoursAgo: number, over: Partial<ImportedTicket> = {}): ImportedTicket {
  return {
    sourceId,
    subject: `Subject ${sourceId}`,
    status: 'open',
    priority: null,
    createdAt: ago(hoursAgo),
    updatedAt: ago(hoursAgo - 1),
    resolvedAt: null,
    closedAt: null,
    tags: [],
    requester: { sourceId: 'c1', email: `${sourceId}@customer.test` },
    assigneeSourceId: null,
    teamSourceId: null,
    organizationSourceId: null,
    customFields: {},
    messages: [msg(`${sourceId}-m1`, hoursAgo)],
    ...over,
  };
}
const page = (...tickets: ImportedTicket[]): ImportRecord[] =>
  tickets.map((t) => ({ type: 'tickets', ticket: t }));

async function get(a: TestAccount, path: string): Promise<Json> {
  const r = await gateway.call('GET', path, { key: a.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body as Json;
}
const listed = async (a: TestAccount, query = '') => get(a, `/api/tickets?per_page=100${query}`);
const bySubject = async (a: TestAccount) =>
  new Map(((await listed(a)).data as Json[]).map((t) => [t.subject as string, t]));
const messagesOf = async (a: TestAccount, uuid: string) =>
  (await get(a, `/api/tickets/${uuid}/messages?limit=100`)).data as Json[];

describe('importing tickets', () => {
  it('writes a page faithfully, found at once; again unchanged; changed at the source updated', async () => {
    const a = await account();
    const solved = ticket('101', 72, {
      status: 'resolved',
      priority: 'high',
      resolvedAt: ago(60),
      tags: ['vip', 'billing'],
      customFields: { plan: 'gold' },
      assigneeSourceId: 'a1',
      messages: [
        msg('101-m1', 72),
        agentSays('101-m2', 71),
        agentSays('101-m3', 70, { internal: true }),
        msg('101-m4', 69),
        msg('101-m5', 68, { author: { kind: 'agent', sourceId: 'gone' } }),
      ],
    });
    const open = ticket('102', 48, {
      assigneeSourceId: 'a9',
      messages: [msg('102-m1', 48), agentSays('102-m2', 47)],
    });
    const older = ticket('103', 96, { status: 'closed', closedAt: ago(90), resolvedAt: ago(91) });
    // Each ticket written is told (the engine's progress within a page: lib/imports/page-progress.ts).
    let told = 0;
    const written = await writeTickets({ ...ctxOf(a), onTicket: () => told++ }, page(solved, open, older));
    expect(written.counts.tickets).toEqual({ source: 3, created: 3, updated: 0, unchanged: 0, failed: 0 });
    expect(told).toBe(3);
    expect(written.counts.messages).toMatchObject({ source: 8, created: 8 });
    expect(written.errors).toEqual(
      expect.arrayContaining([
        { type: 'messages', sourceId: '101-m5', reason: expect.stringContaining('system') },
        { type: 'tickets', sourceId: '102', reason: expect.stringContaining('a9') },
      ]),
    );

    const shown = await bySubject(a);
    // References in the source's creation order, whatever the page's order.
    expect(['Subject 103', 'Subject 101', 'Subject 102'].map((s) => shown.get(s)?.reference)).toEqual([
      'IM-000001',
      'IM-000002',
      'IM-000003',
    ]);
    const one = (await get(a, `/api/tickets/${shown.get('Subject 101')?.uuid}`)).data as Json;
    expect(one).toMatchObject({
      status: 'resolved',
      priority: 'high',
      created_at: solved.createdAt,
      updated_at: solved.updatedAt,
      resolved_at: solved.resolvedAt,
      closed_at: null,
      tags: ['vip', 'billing'],
      custom_fields: { plan: 'gold' },
      assignee: { id: a.agentIds[0] },
      requester: { email: '101@customer.test' },
      description: 'body of 101-m1',
      imported_from: { source: 'zendesk', id: '101', import_id: 'imp_test' },
    });
    expect(shown.get('Subject 102')).toMatchObject({ priority: 'medium', assignee: null });
    const conversation = await messagesOf(a, one.uuid);
    expect(conversation.map((m) => [m.author.type, m.visibility, m.created_at, m.body])).toEqual([
      ['requester', 'public', solved.createdAt, 'body of 101-m1'],
      ['agent', 'public', ago(71), 'body of 101-m2'],
      ['agent', 'internal', ago(70), 'body of 101-m3'],
      ['requester', 'public', ago(69), 'body of 101-m4'],
      ['system', 'public', ago(68), 'body of 101-m5'],
    ]);
    expect((await listed(a, '&status=resolved')).meta.total).toBe(1);
    expect((await listed(a, '&priority=high')).meta.total).toBe(1);
    expect((await listed(a, '&custom_fields[plan]=gold')).data.map((t: Json) => t.subject)).toEqual([
      'Subject 101',
    ]);
    expect((await listed(a, '&search=102@customer')).data.map((t: Json) => t.subject)).toEqual([
      'Subject 102',
    ]);

    // A reply's text edited at the source changes nothing kept here: unchanged (its key's digest moved alone).
    const edited = {
      ...solved,
      messages: solved.messages.map((m, i) => (i === 1 ? { ...m, body: 'edited there' } : m)),
    };
    const again = await writeTickets(ctxOf(a), page(older, edited, open));
    expect(again.counts.tickets).toMatchObject({ unchanged: 3, created: 0, updated: 0 });
    expect(again.counts.messages).toMatchObject({ unchanged: 8, created: 0 });

    // A note posted here after the import stays, and the source's new message is numbered after it.
    const note = await gateway.call('POST', `/api/tickets/${shown.get('Subject 102')?.uuid}/messages`, {
      key: a.apiKey,
      body: { body: 'Local note', visibility: 'internal', agent_id: a.agentIds[1] },
    });
    expect(note.status, note.text).toBe(201);
    const changed = { ...open, status: 'pending' as const, messages: [...open.messages, msg('102-m3', 1)] };
    const updated = await writeTickets(ctxOf(a), page(changed, edited));
    expect(updated.counts.tickets).toMatchObject({ updated: 1, unchanged: 1 });
    expect(updated.counts.messages).toMatchObject({ created: 1, unchanged: 7 });
    const after = (await bySubject(a)).get('Subject 102') as Json;
    expect(after).toMatchObject({ status: 'pending', reference: 'IM-000003', waiting_since: ago(1) });
    expect(after.last_message_at > ago(1)).toBe(true); // the local note, posted now
    expect((await messagesOf(a, after.uuid)).map((m) => m.body)).toEqual([
      'body of 102-m1',
      'body of 102-m2',
      'Local note',
      'body of 102-m3',
    ]);
    expect((await listed(a)).meta.total).toBe(3);
    const feed = await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.*', 'message.*'] });
    // 3 tickets and 5 messages created; then 1 message created and 1 ticket updated: each with import_id. The
    // note posted here (its message and the ticket's update) has none.
    const imported = feed.events.filter((e) => (e as Json).import_id === 'imp_test');
    expect(imported.map((e) => e.type).sort()).toEqual([
      ...Array(6).fill('message.created'),
      ...Array(3).fill('ticket.created'),
      'ticket.updated',
    ]);
    expect(feed.events.length - imported.length).toBe(2);
  });

  it('is silent: no outbox, no breach event for a past due time; a late answer shows its breach; validate writes nothing', async () => {
    const a = await account();
    const late = ticket('201', 100, { messages: [msg('201-m1', 100), agentSays('201-m2', 97)] });
    const unanswered = ticket('202', 50);
    const recent = ticket('203', 0.5);
    const validated = await writeTickets(ctxOf(a, true), page(late, unanswered, recent));
    expect(validated.counts.tickets).toMatchObject({ created: 3 });
    expect((await listed(a)).meta.total).toBe(0);

    await writeTickets(ctxOf(a), page(late, unanswered, recent));
    await breachPass({ limit: 100_000 });
    const breaches = await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.sla_breached'] });
    expect(breaches.events).toEqual([]);
    const shown = await bySubject(a);
    expect(shown.get('Subject 201')?.sla.first_reply).toEqual({
      due_at: formatTimestamp(nowMicros() - 99 * HOUR),
      completed_at: ago(97),
      breached_at: formatTimestamp(nowMicros() - 99 * HOUR),
    });
    expect(shown.get('Subject 202')?.sla.first_reply?.breached_at).toBe(
      formatTimestamp(nowMicros() - 49 * HOUR),
    );
    expect((await listed(a, '&sla=breached')).data.map((t: Json) => t.subject)).toEqual(['Subject 202']);
    const queued = await scanAll({
      TableName: tableName(),
      FilterExpression: 'attribute_exists(#k) AND contains(pk, :acc)',
      ExpressionAttributeNames: { '#k': OUTBOX_ATTR.kind },
      ExpressionAttributeValues: { ':acc': a.accountId },
    });
    expect(queued).toEqual([]);

    // A due time still ahead when the import ran keeps its entry: its breach is written, once, when it passes.
    const due = formatTimestamp(nowMicros() + HOUR / 2);
    await clock().advance(HOUR / 1000);
    await breachPass({ limit: 100_000 });
    const later = await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.sla_breached'] });
    expect(later.events.map((e) => [(e.data.object as Json).subject, (e.data as Json).due_at])).toEqual([
      ['Subject 203', due],
    ]);
  });

  it('writes a page given twice at once each ticket once', async () => {
    const a = await account();
    const tickets = Array.from({ length: 6 }, (_, i) =>
      ticket(`30${i}`, 10 + i, { messages: [msg(`30${i}-m1`, 10 + i), agentSays(`30${i}-m2`, 9 + i)] }),
    );
    const [x, y] = await Promise.all([
      writeTickets(ctxOf(a), page(...tickets)),
      writeTickets(ctxOf(a), page(...tickets)),
    ]);
    const created = (x.counts.tickets?.created ?? 0) + (y.counts.tickets?.created ?? 0);
    expect(created).toBe(6);
    expect((x.counts.tickets?.unchanged ?? 0) + (y.counts.tickets?.unchanged ?? 0)).toBe(6);
    expect((await listed(a)).meta.total).toBe(6);
    // Each run reserved its page's event places with its numbers: the loser's are closed, so the feed reads past
    // them (the clock stands: a place left open would end it there) and holds each ticket's events once.
    const feed = await readFeedToEnd(gateway.call, a.apiKey, { types: ['ticket.*', 'message.*'] });
    expect(feed.events.map((e) => e.type).sort()).toEqual([
      ...Array(6).fill('message.created'),
      ...Array(6).fill('ticket.created'),
    ]);
  });
});

describe('a message id given to two tickets', () => {
  it('writes both tickets, the message with the first ticket that claims it, an error row for the other', async () => {
    const a = await account();
    const one = ticket('801', 6, { messages: [msg('801-m1', 6), agentSays('dup', 5)] });
    const two = ticket('802', 4, { messages: [msg('802-m1', 4), agentSays('dup', 3), msg('802-m3', 2)] });
    const written = await writeTickets(ctxOf(a), page(one, two));
    expect(written.counts.tickets).toMatchObject({ created: 2 });
    expect(written.counts.messages).toMatchObject({ source: 5, created: 4, failed: 1 });
    expect(written.errors).toEqual([
      { type: 'messages', sourceId: 'dup', reason: expect.stringContaining('another') },
    ]);
    const shown = await bySubject(a);
    const bodies = [
      ...(await messagesOf(a, shown.get('Subject 801')?.uuid)),
      ...(await messagesOf(a, shown.get('Subject 802')?.uuid)),
    ].map((m) => m.body);
    expect(bodies.filter((b) => b === 'body of dup')).toHaveLength(1);
    expect(bodies).toContain('body of 802-m3');
    const again = await writeTickets(ctxOf(a), page(one, two));
    expect(again.counts.tickets).toMatchObject({ unchanged: 2 });
  });
});

describe('people by their source keys', () => {
  it('files the requester as the contact its key names, with its team and organization', async () => {
    const a = await account();
    const id = (await reserveIds(a.accountId, { contact: 1 })).contact as number;
    const contact = await createContact(
      a.accountId,
      {
        ...{ id, uuid: newContactUuid(id), email: 'Rita@Customer.test', firstName: 'Rita', lastName: 'Req' },
        ...{ phone: '+15550100', createdAt: ago(500) },
      },
      { type: 'contact.created', object: {}, version: 1 },
    );
    const org = await gateway.call('POST', '/api/organizations', {
      key: a.apiKey,
      body: { name: 'Customer Inc' },
    });
    expect(org.status, org.text).toBe(201);
    const team = await gateway.call('POST', '/api/teams', { key: a.apiKey, body: { name: 'Billing' } });
    expect(team.status, team.text).toBe(201);
    const key = (type: 'contacts' | 'organizations' | 'teams', sourceId: string, objectId: string | number) =>
      claimSourceKey(
        a.accountId,
        { source: 'zendesk', type, sourceId },
        { objectId, importId: 'imp_people', matched: false, digest: 'd' },
      );
    await commit([
      key('contacts', 'c7', contact.uuid),
      key('organizations', 'o1', org.body.data.id),
      key('teams', 'g1', team.body.data.id),
    ]);
    const record = ticket('601', 5, {
      requester: { sourceId: 'c7', email: null },
      organizationSourceId: 'o1',
      teamSourceId: 'g1',
      messages: [msg('601-m1', 5, { author: { kind: 'contact', sourceId: 'c7' } }), agentSays('601-m2', 4)],
    });
    const written = await writeTickets(ctxOf(a), page(record));
    expect(written.errors).toEqual([]);
    const [shown] = (await listed(a)).data as Json[];
    const one = (await get(a, `/api/tickets/${shown?.uuid}`)).data as Json;
    expect(one).toMatchObject({
      requester: { email: 'Rita@Customer.test', name: 'Rita Req', phone: '+15550100', contact_id: id },
      team: { id: team.body.data.id, name: 'Billing' },
      organization: { id: org.body.data.id, name: 'Customer Inc' },
    });
    expect((await messagesOf(a, one.uuid)).map((m) => [m.author.type, m.author.email])).toEqual([
      ['requester', 'Rita@Customer.test'],
      ['agent', 'agent1@desk.test'],
    ]);
    expect((await listed(a, `&organization_id=${org.body.data.id}`)).meta.total).toBe(1);
  });
});

describe('hostile source data', () => {
  it('stores a 10,000-character subject, 1,000 tags 60 custom fields and a script in a comment, as given', async () => {
    const a = await account();
    const words = Array.from({ length: 1_500 }, (_, i) => `w${i}`).join(' ');
    const hostile = ticket('701', 3, {
      subject: words.slice(0, 10_000),
      tags: Array.from({ length: 1_000 }, (_, i) => `tag${i}`),
      customFields: Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`f${i}`, `v${i}`])),
      messages: [msg('701-m1', 3, { body: '<script>alert(1)</script>' })],
    });
    const written = await writeTickets(ctxOf(a), page(hostile, ticket('702', 2)));
    expect(written.counts.tickets).toMatchObject({ created: 2, failed: 0 });
    const shown = await bySubject(a);
    expect(shown.get(hostile.subject)?.tags).toHaveLength(1_000);
    expect(shown.get(hostile.subject)?.description).toBe('<script>alert(1)</script>');
    expect((await listed(a, '&custom_fields[f59]=v59')).meta.total).toBe(1);
  });
});

describe('a long conversation', () => {
  it('counts a page written again after a crash as its first attempt did (its counts never saved), and only that page', async () => {
    const a = await account();
    const at = (page: number) => ({ ...ctxOf(a), mark: `imp_test:${page}` });
    const t = ticket('601', 30, { messages: [msg('601-m1', 30), agentSays('601-m2', 29)] });
    const u = ticket('602', 20);
    // Page 4 wrote 601, then the runner died before the job's save: page 4 is written again, 602 with it.
    await writeTickets(at(4), page(t));
    const again = await writeTickets(at(4), page(t, u));
    expect(again.counts.tickets).toMatchObject({ created: 2, unchanged: 0 });
    expect(again.counts.messages).toMatchObject({ created: 3, unchanged: 0 });
    // A reply at the source, read on page 9: updated, its one new message created; page 9 again counts the same.
    const replied = { ...t, messages: [...t.messages, msg('601-m3', 1)] };
    const updated = await writeTickets(at(9), page(replied));
    expect(updated.counts.tickets).toMatchObject({ updated: 1 });
    expect(updated.counts.messages).toMatchObject({ created: 1, unchanged: 2 });
    const retried = await writeTickets(at(9), page(replied));
    expect(retried.counts).toEqual(updated.counts);
    // Any other page (a second run, a `since` pass) finds them unchanged.
    const later = await writeTickets(at(10), page(replied, u));
    expect(later.counts.tickets).toMatchObject({ created: 0, updated: 0, unchanged: 2 });
    expect(((await listed(a)).data as Json[]).length).toBe(2);
  });

  it('gives a page written again after a crash the numbers its first attempt took: references do not skip', async () => {
    const a = await account();
    const at = { ...ctxOf(a), mark: 'imp_test:7' };
    const both = page(ticket('701', 30), ticket('702', 20));
    // The first attempt commits one ticket; the other's commit is lost (the runner dies with it).
    const plan = {
      operation: 'TransactWriteItems',
      after: 'TransactWriteItems',
      mode: 'lost-request',
    } as const;
    await expect(withFault(plan, () => writeTickets(at, both))).rejects.toThrow();
    const again = await writeTickets(at, both);
    expect(again.counts.tickets).toMatchObject({ created: 2, unchanged: 0 });
    const numbers = ((await listed(a)).data as Json[]).map((t) => String(t.reference).split('-')[1]).sort();
    expect(numbers).toEqual(['000001', '000002']);
  });

  it('is written over several commits, whole, and found unchanged after', async () => {
    const a = await account();
    const messages = Array.from({ length: 45 }, (_, k) => (k % 2 ? agentSays : msg)(`l-m${k}`, 50 - k / 10));
    messages[44] = { ...(messages[44] as ImportedMessage), body: 'x'.repeat(70_000) };
    const long = ticket('501', 50, { messages });
    const first = await writeTickets(ctxOf(a), page(long));
    expect(first.counts.messages).toMatchObject({ created: 45 });
    expect(first.errors).toEqual([
      { type: 'messages', sourceId: 'l-m44', reason: expect.stringContaining('cut') },
    ]);
    const [shown] = (await listed(a)).data as Json[];
    const conversation = await messagesOf(a, shown?.uuid);
    expect(conversation.map((m) => m.body)).toEqual([
      ...messages.slice(0, 44).map((m) => m.body),
      'x'.repeat(65_536),
    ]);
    expect(conversation.at(-1)?.created_at).toBe(messages.at(-1)?.createdAt);
    const again = await writeTickets(ctxOf(a), page(long));
    expect(again.counts.tickets).toMatchObject({ unchanged: 1 });
  });
});

// A figure, not a behaviour (tests check behaviour, benchmarks report figures): run only when asked,
describe('a reply to an imported mail', () => {
  let server: MailServer;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'deskpipe-import-mail-'));
    server = await startMailServer({ port: 0, dir });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('threads into the imported ticket by In-Reply-To', async () => {
    const a = await account();
    const imported = ticket('401', 20, {
      messages: [
        msg('401-m1', 20, { messageId: 'old-1@zendesk.test' }),
        agentSays('401-m2', 19, { messageId: 'old-2@zendesk.test' }),
      ],
    });
    await writeTickets(ctxOf(a), page(imported));
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.port,
      secure: false,
      ignoreTLS: true,
    });
    await transport.sendMail({
      from: '401@customer.test',
      to: a.address,
      subject: 'Re: Subject 401',
      text: 'Still broken.',
      inReplyTo: '<old-2@zendesk.test>',
    });
    await server.idle();
    const shown = await listed(a);
    expect(shown.meta.total).toBe(1);
    const conversation = await messagesOf(a, shown.data[0].uuid);
    expect(conversation.map((m) => m.body)).toEqual(['body of 401-m1', 'body of 401-m2', 'Still broken.']);
    expect(conversation[2]?.email.threading.matched_by).toBe('in_reply_to');
  });
});
