import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_MAIL_BYTES, type MailServer, startMailServer } from '#infra/local/mail.ts';
import { mailToken, tokenAddress } from '#lib/email/tokens.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';

/**
 * The e-mail channel's receiving side (decisions.md, "The e-mail channel"): a real SMTP client (nodemailer)
 * against npm start's real SMTP server on 127.0.0.1, processing into DynamoDB Local, read back through the API.
 */
const gateway = useGateway();
let server: MailServer;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-mail-'));
  server = await startMailServer({ port: 0, dir });
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const transport = () =>
  nodemailer.createTransport({ host: '127.0.0.1', port: server.port, secure: false, ignoreTLS: true });

async function send(mail: SendMailOptions) {
  const info = await transport().sendMail(mail);
  await server.idle();
  return info;
}

async function mailAccount(extra: Record<string, unknown> = {}) {
  const domain = `m${randomBytes(5).toString('hex')}.test`;
  const account = await createTestAccount({
    ticket_prefix: 'EM',
    agents: agentsFile(1),
    email: { addresses: [`support@${domain}`, `help@${domain}`] },
    ...extra,
  });
  return { ...account, address: `support@${domain}`, second: `help@${domain}`, domain };
}

const inbound = async (account: TestAccount) => {
  const r = await gateway.call('GET', '/api/email/inbound?limit=100', { key: account.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body.data as Record<string, unknown>[];
};
// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;
const messagesOf = async (account: TestAccount, ticket: string) => {
  const r = await gateway.call('GET', `/api/tickets/${ticket}/messages?limit=100`, { key: account.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body.data as Json[];
};
const ticketsOf = async (account: TestAccount) => {
  const r = await gateway.call('GET', '/api/tickets?per_page=100', { key: account.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body.data as Json[];
};
const mid = () => `<${randomBytes(8).toString('hex')}@customer.test>`;

describe('mail in', () => {
  it('a new mail opens a ticket (channel email, requester, subject, body, attachment); each threading rule threads a reply', async () => {
    const account = await mailAccount();
    const first = mid();
    await send({
      from: '"Rita Requester" <Rita@Customer.test>',
      to: account.address.toUpperCase(),
      subject: 'Printer on fire',
      messageId: first,
      text: 'It is burning.\n\n-- \nRita\nSent from my phone',
      attachments: [{ filename: 'photo.txt', content: 'smoke' }],
    });
    const [log] = await inbound(account);
    expect(log).toMatchObject({
      outcome: 'new_ticket',
      from: 'rita@customer.test',
      subject: 'Printer on fire',
    });
    const uuid = log?.ticket_uuid as string;
    const ticket = (await gateway.call('GET', `/api/tickets/${uuid}`, { key: account.apiKey })).body.data;
    expect(ticket).toMatchObject({
      channel: 'email',
      subject: 'Printer on fire',
      description: 'It is burning.',
      requester: { email: 'rita@customer.test', name: 'Rita Requester' },
    });
    const [description] = await messagesOf(account, uuid);
    expect(description?.email).toMatchObject({
      message_id: first.slice(1, -1),
      threading: { matched_by: 'new_ticket' },
      quoted_text_removed: true,
    });
    expect(description?.attachments).toEqual([
      { id: 'att_0001', filename: 'photo.txt', content_type: 'text/plain', size: 5 },
    ]);

    // 1. token address; 2. In-Reply-To; 2b. References; 3. the subject's reference from the requester.
    const reference = ticket.reference as string;
    await send({
      from: 'rita@customer.test',
      to: tokenAddress(account.address, mailToken(account.accountId, reference)),
      subject: 'token',
      messageId: mid(),
      text: 'by token',
    });
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'Re: Printer on fire',
      messageId: mid(),
      inReplyTo: first,
      text: 'by in-reply-to\n\nOn Mon, Ann wrote:\n> quoted history',
    });
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'refs',
      messageId: mid(),
      references: [mid(), first],
      text: 'by references',
    });
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: `Still burning [${reference}]`,
      messageId: mid(),
      text: 'by subject',
    });
    // The reference from someone else is not enough: a new ticket.
    await send({
      from: 'mallory@elsewhere.test',
      to: account.address,
      subject: `About [${reference}]`,
      messageId: mid(),
      text: 'not the requester',
    });
    const conversation = await messagesOf(account, uuid);
    expect(conversation.map((m) => [m.body, m.email?.threading.matched_by, m.author.type])).toEqual([
      ['It is burning.', 'new_ticket', 'requester'],
      ['by token', 'token_address', 'requester'],
      ['by in-reply-to', 'in_reply_to', 'requester'],
      ['by references', 'references', 'requester'],
      ['by subject', 'subject_reference', 'requester'],
    ]);
    expect(conversation[2]?.email.quoted_text_removed).toBe(true);
    expect((await ticketsOf(account)).length).toBe(2);
  });

  it('an agent replying by mail (authenticated) writes as that agent; a requester on a closed ticket opens a follow-up', async () => {
    const account = await mailAccount();
    const first = mid();
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'Help',
      messageId: first,
      text: 'hi',
    });
    const uuid = (await inbound(account))[0]?.ticket_uuid as string;
    await send({
      from: 'Agent1@desk.test',
      to: account.address,
      subject: 'Re: Help',
      messageId: mid(),
      inReplyTo: first,
      // As the receiving edge relay says it (the local server trusts its own authserv-id only).
      headers: { 'Authentication-Results': 'deskpipe.local; dmarc=pass header.from=desk.test' },
      text: 'On it.',
    });
    const closed = await gateway.call('PATCH', `/api/tickets/${uuid}`, {
      key: account.apiKey,
      body: { status: 'closed' },
    });
    expect(closed.status, closed.text).toBe(200);
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'Re: Help',
      messageId: mid(),
      inReplyTo: first,
      text: 'Again please',
    });
    const [followUp, reply] = await inbound(account);
    expect(reply).toMatchObject({ outcome: 'threaded', reason: 'in_reply_to', ticket_uuid: uuid });
    expect(followUp).toMatchObject({ outcome: 'follow_up', reason: 'in_reply_to' });
    expect(followUp?.ticket_uuid).not.toBe(uuid);
    const messages = await messagesOf(account, uuid);
    expect(messages[1]?.author).toMatchObject({ type: 'agent', email: 'agent1@desk.test' });
    const next = await messagesOf(account, followUp?.ticket_uuid as string);
    expect(next.map((m) => [m.body, m.channel])).toEqual([['Again please', 'email']]);
  });

  it("two accounts: a mail to A quoting B's Message-ID never touches B", async () => {
    const a = await mailAccount();
    const b = await mailAccount();
    const ofB = mid();
    await send({ from: 'rita@customer.test', to: b.address, subject: 'B', messageId: ofB, text: 'to B' });
    const bTicket = (await inbound(b))[0]?.ticket_uuid as string;
    const bTicketRef = (await ticketsOf(b))[0]?.reference as string;
    await send({
      from: 'rita@customer.test',
      to: a.address,
      subject: `Re: B [${bTicketRef}]`,
      messageId: mid(),
      inReplyTo: ofB,
      references: [ofB],
      text: 'to A',
    });
    expect((await inbound(a))[0]).toMatchObject({ outcome: 'new_ticket' });
    expect(await messagesOf(b, bTicket)).toHaveLength(1);
    expect(await inbound(b)).toHaveLength(1);
  });

  it('the same mail twice at once (two addresses, two deliveries) is one message', async () => {
    const account = await mailAccount();
    const first = mid();
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'Dup',
      messageId: first,
      text: 'x',
    });
    const uuid = (await inbound(account))[0]?.ticket_uuid as string;
    const reply = {
      from: 'rita@customer.test',
      subject: 'Re: Dup',
      messageId: mid(),
      inReplyTo: first,
      text: 'once',
    };
    await Promise.all([
      transport().sendMail({ ...reply, to: account.address }),
      transport().sendMail({ ...reply, to: account.second }),
      transport().sendMail({ ...reply, to: account.address }),
    ]);
    await server.idle();
    expect((await messagesOf(account, uuid)).map((m) => m.body)).toEqual(['x', 'once']);
    const outcomes = (await inbound(account)).slice(0, 3).map((r) => r.outcome);
    expect(outcomes.sort()).toEqual(['duplicate', 'duplicate', 'threaded']);
  });

  it('automatic mail is recorded with its reason and opens no ticket', async () => {
    const account = await mailAccount();
    const cases: [SendMailOptions, string, string][] = [
      [{ headers: { 'Auto-Submitted': 'auto-replied' } }, 'automatic', 'auto_submitted'],
      [{ headers: { 'X-Autoreply': 'yes' } }, 'automatic', 'x_autoreply'],
      [{ headers: { Precedence: 'bulk' } }, 'automatic', 'precedence'],
      [{ headers: { 'List-Id': '<news.example>' } }, 'automatic', 'mailing_list'],
      [{ headers: { 'X-Loop': 'x' } }, 'automatic', 'x_loop'],
      [{ from: 'MAILER-DAEMON@customer.test' }, 'automatic', 'system_sender'],
      [{ from: account.second }, 'automatic', 'own_address'],
      // A report to no tagged envelope sender of the account's: nothing marked, `unverified`.
      [{ envelope: { from: '', to: account.address } }, 'bounce', 'unverified'],
    ];
    for (const [extra] of cases) {
      await send({
        from: 'rita@customer.test',
        to: account.address,
        subject: 'Out of office',
        text: 'away',
        ...extra,
      });
    }
    const logged = (await inbound(account)).reverse();
    expect(logged.map((r) => [r.outcome, r.reason])).toEqual(cases.map(([, o, r]) => [o, r]));
    expect(await ticketsOf(account)).toEqual([]);
  });

  it('automatic mail that matches a ticket threads into it without changing its status, waiting_since or clocks; a closed ticket gets no follow-up', async () => {
    const account = await mailAccount();
    const first = mid();
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'Help',
      messageId: first,
      text: 'x',
    });
    const [opened] = (await inbound(account)) as Json[];
    const uuid = opened?.ticket_uuid as string;
    // The agent answers and sets it pending: the requester no longer waits, the first-reply clock is done.
    const answered = await gateway.call('POST', `/api/tickets/${uuid}/messages`, {
      key: account.apiKey,
      body: { body: 'Try this.', author: 'agent', agent_id: 1, status: 'pending' },
    });
    expect(answered.status, answered.text).toBe(201);
    const before = (await gateway.call('GET', `/api/tickets/${uuid}`, { key: account.apiKey })).body
      .data as Json;
    // The requester's out-of-office answers the reply (In-Reply-To the ticket's mail): threaded, nothing moves.
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'Automatic reply: Help',
      messageId: mid(),
      inReplyTo: first,
      headers: { 'Auto-Submitted': 'auto-replied' },
      text: 'I am away until Monday.',
    });
    const [logged] = (await inbound(account)) as Json[];
    expect(logged).toMatchObject({ outcome: 'automatic', reason: 'auto_submitted', ticket_uuid: uuid });
    const messages = await messagesOf(account, uuid);
    expect(messages.at(-1)).toMatchObject({
      id: logged?.message_id,
      body: 'I am away until Monday.',
      email: { automatic: 'auto_submitted', threading: { matched_by: 'in_reply_to' } },
    });
    const after = (await gateway.call('GET', `/api/tickets/${uuid}`, { key: account.apiKey })).body
      .data as Json;
    expect(after.status).toBe('pending');
    const unchanged = (t: Json) => ({ status: t.status, waiting_since: t.waiting_since, sla: t.sla });
    expect(unchanged(after)).toEqual(unchanged(before));
    expect(after.last_message_at).toBe(messages.at(-1)?.created_at);
    // Closed: an automatic mail opens no follow-up (a requester's own mail would).
    const closed = await gateway.call('PATCH', `/api/tickets/${uuid}`, {
      key: account.apiKey,
      body: { status: 'closed' },
    });
    expect(closed.status, closed.text).toBe(200);
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'Automatic reply: Help',
      messageId: mid(),
      inReplyTo: first,
      headers: { 'X-Autoreply': 'yes' },
      text: 'Still away.',
    });
    const [ignored] = (await inbound(account)) as Json[];
    expect(ignored).toMatchObject({ outcome: 'automatic', reason: 'x_autoreply', ticket_uuid: null });
    expect(await ticketsOf(account)).toHaveLength(1);
    expect(await messagesOf(account, uuid)).toHaveLength(messages.length);
  });
});

describe('addresses', () => {
  it('belong to one account: apply refuses one another account holds, naming the field', async () => {
    const a = await mailAccount();
    await expect(
      createTestAccount({ email: { addresses: ['other@elsewhere.test', a.second.toUpperCase()] } }),
    ).rejects.toThrow(/email\.addresses\[1\]: belongs to another account/);
    // Mail to it still goes to its owner.
    await send({
      from: 'rita@customer.test',
      to: a.second,
      subject: 'still mine',
      messageId: mid(),
      text: 'x',
    });
    expect((await inbound(a))[0]).toMatchObject({ outcome: 'new_ticket', subject: 'still mine' });
  });
});

describe('bad mail', () => {
  it('is refused (550) for an unknown recipient', async () => {
    await expect(
      transport().sendMail({ from: 'a@b.test', to: 'nobody@nowhere.test', text: 'x' }),
    ).rejects.toThrow(/550/);
  });

  it('takes at most 50 recipients a message: the 51st RCPT is refused 452 (too many recipients), the mail goes to the 50', async () => {
    const account = await mailAccount();
    const to = Array.from({ length: 51 }, (_, i) => `support+r${i}@${account.domain}`);
    const info = await send({ from: 'rita@customer.test', to, subject: 'Many', messageId: mid(), text: 'x' });
    expect(info.accepted).toHaveLength(50);
    expect(info.rejected).toEqual([to[50]]);
    expect(info.rejectedErrors?.[0]?.message).toMatch(/452 .*too many recipients/i);
    expect((await inbound(account))[0]).toMatchObject({ outcome: 'new_ticket', subject: 'Many' });
  });

  it('refuses a message past 25 MiB while it streams: nothing past the limit is written, then 552', async () => {
    const account = await mailAccount();
    const incoming = join(dir, 'incoming');
    let largest = 0;
    let sending = true;
    // What the server has on disk while the message streams in (its one incoming file).
    const watch = (async () => {
      while (sending) {
        for (const name of await readdir(incoming)) {
          const size = (await stat(join(incoming, name)).catch(() => undefined))?.size ?? 0;
          largest = Math.max(largest, size);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const head = `From: rita@customer.test\r\nTo: ${account.address}\r\nSubject: huge\r\n\r\n`;
    const line = `${'x'.repeat(998)}\r\n`;
    const raw = Buffer.concat([Buffer.from(head), Buffer.from(line.repeat(40 * 1024))]);
    await expect(
      transport().sendMail({ envelope: { from: 'rita@customer.test', to: account.address }, raw }),
    ).rejects.toThrow(/552/);
    sending = false;
    await watch;
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThanOrEqual(MAX_MAIL_BYTES + 1024);
    expect(await readdir(incoming)).toEqual([]);
    await send({
      from: 'rita@customer.test',
      to: account.address,
      subject: 'after',
      messageId: mid(),
      text: 'x',
    });
    expect((await inbound(account))[0]).toMatchObject({ outcome: 'new_ticket', subject: 'after' });
  });

  it('malformed mail gets a clear outcome, never a crash or a hang, and the server keeps serving', async () => {
    const account = await mailAccount();
    const env = { from: 'rita@customer.test', to: account.address };
    const raws: [string, string | Buffer][] = [
      [
        'broken boundary',
        'From: rita@customer.test\r\nSubject: broken\r\nMIME-Version: 1.0\r\n' +
          'Content-Type: multipart/mixed; boundary="abc"\r\n\r\n--abc\r\nContent-Type: text/plain\r\n\r\nbody without end\r\n--ab',
      ],
      [
        'wrong charset',
        'From: rita@customer.test\r\nSubject: =?x-unknown?B?SGVsbG8=?=\r\nContent-Type: text/plain; charset=x-nonsense\r\n\r\nH\xe9llo',
      ],
      [
        'huge header block',
        `From: rita@customer.test\r\nSubject: big\r\n${Array.from({ length: 20_000 }, (_, i) => `X-Filler-${i}: ${'y'.repeat(90)}`).join('\r\n')}\r\n\r\nbody`,
      ],
      ['long subject', `From: rita@customer.test\r\nSubject: ${'s'.repeat(100_000)}\r\n\r\nbody`],
      ['nul bytes', Buffer.from('From: rita@customer.test\r\nSubject: nul\0here\r\n\r\nbo\0dy\0')],
      ['no from', 'To: x@y.test\r\nSubject: nobody\r\n\r\nwho am I'],
    ];
    for (const [, raw] of raws) await send({ envelope: env, raw });
    await send({
      ...env,
      subject: 'many attachments',
      text: 'see attached',
      attachments: Array.from({ length: 150 }, (_, i) => ({ filename: `f${i}.txt`, content: `${i}` })),
    });
    const logged = (await inbound(account)).reverse();
    expect(logged.map((r) => r.outcome)).toEqual([
      'new_ticket',
      'new_ticket',
      'new_ticket',
      'new_ticket',
      'new_ticket',
      'rejected',
      'new_ticket',
    ]);
    expect(logged[5]?.reason).toBe('no_sender');
    expect(String(logged[3]?.subject).length).toBeLessThanOrEqual(998);
    expect(logged[4]?.subject).toBe('nulhere');
    const many = await messagesOf(account, logged[6]?.ticket_uuid as string);
    expect(many[0]?.attachments).toHaveLength(100);
    expect(many[0]?.email.attachments_omitted).toBe(50);
    // Still serving.
    await send({ ...env, subject: 'after', messageId: mid(), text: 'fine' });
    expect((await inbound(account))[0]).toMatchObject({ outcome: 'new_ticket', subject: 'after' });
  });
});
