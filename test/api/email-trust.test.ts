import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type MailServer, startMailServer } from '#infra/local/mail.ts';
import { outboxPass } from '#lib/email/outbox.ts';
import { type Sender, smtpSender } from '#lib/email/senders.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { useGateway } from '#test/support/http.ts';
import { type SmtpSink, startSmtpSink } from '#test/support/smtp-sink.ts';

/**
 * Who may write what by mail (decisions.md, "The e-mail channel": threading rule 1, agents and end users,
 * "Authentication"): reply tokens carry a tag only the service makes, only the requester or a Cc of the ticket's
 * mail changes its status, and an agent's address writes as the agent only when the mail authenticates (the
 * local server trusts an `Authentication-Results` header of its own authserv-id, `deskpipe.local`), and is then
 * sent on to the requester. A real SMTP client against npm start's SMTP server, the outbox to a real relay.
 */
const gateway = useGateway();
let server: MailServer;
let sink: SmtpSink;
let relay: Sender;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-trust-'));
  [server, sink] = await Promise.all([startMailServer({ port: 0, dir }), startSmtpSink()]);
  relay = smtpSender(sink.url);
});
afterAll(async () => {
  relay?.close();
  await Promise.all([server?.stop(), sink?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;

async function mailAccount() {
  const domain = `t${randomBytes(5).toString('hex')}.test`;
  const account = await createTestAccount({
    ticket_prefix: 'TR',
    agents: agentsFile(1),
    email: { addresses: [`support@${domain}`] },
  });
  return { ...account, address: `support@${domain}`, domain };
}
type MailAccount = Awaited<ReturnType<typeof mailAccount>>;

async function send(mail: SendMailOptions) {
  await nodemailer
    .createTransport({ host: '127.0.0.1', port: server.port, secure: false, ignoreTLS: true })
    .sendMail(mail);
  await server.idle();
}

const api = async (account: TestAccount, method: string, path: string, body?: unknown) => {
  const r = await gateway.call(method, path, { key: account.apiKey, body });
  expect(r.status, r.text).toBeLessThan(300);
  return r.body;
};
const lastLog = async (account: TestAccount) =>
  (await api(account, 'GET', '/api/email/inbound?limit=1')).data[0] as Json;
const messagesOf = async (account: TestAccount, ticket: string) =>
  (await api(account, 'GET', `/api/tickets/${ticket}/messages?limit=100`)).data as Json[];
const ticketOf = async (account: TestAccount, ticket: string) =>
  (await api(account, 'GET', `/api/tickets/${ticket}`)).data as Json;
/** One outbox pass over the file's table (test/support/file-table.ts): every test's mail. */
const pass = () => outboxPass({ sender: relay });
// A test's mail left queued (what it did not check) is sent after it, so the next test's pass sends its own only.
afterEach(() => pass());
const sentTo = (address: string) => sink.mails.filter((m) => m.recipients.includes(address));
const mid = () => `<${randomBytes(8).toString('hex')}@customer.test>`;

/** Rita's mail opens a ticket (`cc` copied); answers the ticket and the opening Message-ID. */
async function opened(account: MailAccount, rita: string, cc?: string) {
  const opening = mid();
  await send({
    from: `"Rita" <${rita}>`,
    to: account.address,
    ...(cc ? { cc } : {}),
    subject: 'Printer on fire',
    messageId: opening,
    text: 'Help.',
  });
  const log = await lastLog(account);
  expect(log.outcome).toBe('new_ticket');
  return { ticket: await ticketOf(account, log.ticket_uuid), opening };
}

const customer = (name: string) => `${name}.${randomBytes(3).toString('hex')}@customer.test`;
/** The header a receiving edge relay adds, which the local server trusts for its own authserv-id only. */
const authResults = (authservId: string, dmarc: string) => ({
  'Authentication-Results':
    `${authservId}; spf=pass smtp.mailfrom=desk.test; dkim=pass (good signature) header.d=desk.test; ` +
    `dmarc=${dmarc} header.from=desk.test`,
});

describe('reply tokens', () => {
  it('carry a tag only the service makes: the Reply-To threads by token, a bare or guessed reference does not', async () => {
    const account = await mailAccount();
    const rita = customer('rita');
    const { ticket } = await opened(account, rita);
    await api(account, 'POST', `/api/tickets/${ticket.uuid}/messages`, { body: 'On it.', agent_id: 1 });
    expect((await pass()).counts.sent).toBe(1);
    const [mail] = sentTo(rita);
    const ref = (ticket.reference as string).toLowerCase();
    const replyTo = mail?.parsed.replyTo?.value[0]?.address as string;
    expect(replyTo).toMatch(new RegExp(`^support\\+${ref}-[a-z2-7]{8}@${account.domain}$`));
    // The envelope sender (where reports come back) carries its own tag, not the reply token's.
    expect(mail?.envelopeFrom).toMatch(new RegExp(`^support\\+${ref}\\.2-[a-z2-7]{8}@${account.domain}$`));
    expect(mail?.envelopeFrom.split('-').at(-1)).not.toBe(replyTo.split('-').at(-1));

    await send({
      from: rita,
      to: replyTo.toUpperCase(),
      subject: 'token',
      messageId: mid(),
      text: 'by token',
    });
    expect(await lastLog(account)).toMatchObject({
      outcome: 'threaded',
      reason: 'token_address',
      ticket_uuid: ticket.uuid,
    });
    // A guessed reference (bare, or with a made-up tag, or another ticket's tag) threads by the other rules:
    // here none matches, so each is a new ticket, from the requester as from anyone.
    const otherTag = replyTo.slice(replyTo.lastIndexOf('-') + 1, replyTo.indexOf('@'));
    const guesses = [
      `support+${ref}@${account.domain}`,
      `support+${ref}-aaaaaaaa@${account.domain}`,
      `support+${ref.replace(/\d$/, (d) => String((Number(d) + 1) % 10))}-${otherTag}@${account.domain}`,
    ];
    for (const [i, to] of guesses.entries()) {
      await send({ from: i === 0 ? rita : customer('mallory'), to, subject: 'guess', text: 'in?' });
      expect(await lastLog(account), to).toMatchObject({ outcome: 'new_ticket', reason: 'new_ticket' });
    }
    expect((await messagesOf(account, ticket.uuid)).map((m) => m.body)).toEqual([
      'Help.',
      'On it.',
      'by token',
    ]);
  });
});

describe('end users by mail', () => {
  it('only the requester or a Cc of the ticket’s mail changes its status; anyone else writes as themselves and changes nothing', async () => {
    const account = await mailAccount();
    const rita = customer('rita');
    const boss = customer('boss');
    const { ticket, opening } = await opened(account, rita, `"The Boss" <${boss}>`);
    await api(account, 'POST', `/api/tickets/${ticket.uuid}/messages`, {
      body: 'Try this.',
      agent_id: 1,
      status: 'pending',
    });
    await pass();

    // A stranger who knows the thread's Message-ID: a message in their own name; the ticket stays pending.
    const mallory = customer('mallory');
    await send({
      from: `"Mallory" <${mallory}>`,
      to: account.address,
      subject: 'Re: Printer on fire',
      inReplyTo: opening,
      text: 'Please close it.',
    });
    expect(await lastLog(account)).toMatchObject({ outcome: 'threaded', ticket_uuid: ticket.uuid });
    expect((await messagesOf(account, ticket.uuid)).at(-1)).toMatchObject({
      body: 'Please close it.',
      author: { type: 'requester', name: 'Mallory', email: mallory },
    });
    expect((await ticketOf(account, ticket.uuid)).status).toBe('pending');

    // The Cc of Rita's mail reopens it, as Rita would.
    await send({
      from: `"The Boss" <${boss}>`,
      to: account.address,
      inReplyTo: opening,
      text: 'Still broken.',
    });
    expect((await messagesOf(account, ticket.uuid)).at(-1)?.author).toMatchObject({
      name: 'The Boss',
      email: boss,
    });
    expect((await ticketOf(account, ticket.uuid)).status).toBe('open');

    // Closed: a stranger's mail opens no follow-up in Rita's name (it is a ticket of their own); the Cc's does.
    await api(account, 'PATCH', `/api/tickets/${ticket.uuid}`, { status: 'closed' });
    await send({ from: mallory, to: account.address, inReplyTo: opening, text: 'Reopen!' });
    const strangers = await lastLog(account);
    expect(strangers).toMatchObject({ outcome: 'new_ticket' });
    expect(await ticketOf(account, strangers.ticket_uuid)).toMatchObject({
      requester: { email: mallory },
      parent_uuid: null,
    });
    await send({ from: boss, to: account.address, inReplyTo: opening, text: 'Again, please.' });
    const followUp = await lastLog(account);
    expect(followUp).toMatchObject({ outcome: 'follow_up' });
    expect(await ticketOf(account, followUp.ticket_uuid)).toMatchObject({
      requester: { email: rita },
      parent_uuid: ticket.uuid,
    });
    expect((await ticketOf(account, ticket.uuid)).status).toBe('closed');
  });
});

describe("an agent's address", () => {
  it('writes as the agent only when the mail authenticates for its domain; otherwise the mail is suspended', async () => {
    const account = await mailAccount();
    const rita = customer('rita');
    const { ticket, opening } = await opened(account, rita);

    const forged = [
      {}, // no Authentication-Results at all
      authResults('mx.elsewhere.test', 'pass'), // another host's header: ignored
      authResults('deskpipe.local', 'fail'),
      authResults('deskpipe.local', 'pass header.from=elsewhere.test'), // a verdict for another domain
    ];
    for (const headers of forged) {
      await send({
        from: 'agent1@desk.test',
        to: account.address,
        subject: 'Re: Printer on fire',
        inReplyTo: opening,
        headers,
        text: 'Closing this, nothing to see.',
      });
      expect(await lastLog(account), JSON.stringify(headers)).toMatchObject({
        outcome: 'suspended',
        ticket_uuid: null,
        message_id: null,
      });
    }
    const [description, ...more] = await messagesOf(account, ticket.uuid);
    expect(more).toEqual([]);
    expect((await pass()).read).toBe(0);
    // Every received mail records its authentication: Rita's had no trusted header.
    expect(description?.email.authentication).toEqual({ spf: 'none', dkim: 'none', dmarc: 'none' });

    await send({
      from: '"Agent One" <agent1@desk.test>',
      to: account.address,
      subject: 'Re: Printer on fire',
      inReplyTo: opening,
      headers: authResults('deskpipe.local', 'pass'),
      text: 'Unplug it, please.\n\nOn Mon, Rita wrote:\n> Help.',
    });
    expect(await lastLog(account)).toMatchObject({ outcome: 'threaded', reason: 'in_reply_to' });
    const reply = (await messagesOf(account, ticket.uuid)).at(-1);
    expect(reply).toMatchObject({
      body: 'Unplug it, please.',
      author: { type: 'agent', agent_id: 1 },
      visibility: 'public',
      email: { authentication: { spf: 'pass', dkim: 'pass', dmarc: 'pass' } },
    });
  });

  it('an authenticated agent’s reply by mail is sent to the requester as any agent reply is', async () => {
    const account = await mailAccount();
    const rita = customer('rita');
    const { ticket, opening } = await opened(account, rita);
    // Rita writes again: her second mail is the thread's newest, the one the relayed reply answers.
    const again = mid();
    await send({
      from: rita,
      to: account.address,
      inReplyTo: opening,
      messageId: again,
      text: 'Still burning.',
    });
    await send({
      from: 'agent1@desk.test',
      to: account.address,
      subject: 'Re: Printer on fire',
      inReplyTo: opening,
      headers: authResults('deskpipe.local', 'pass'),
      text: 'We are on our way.',
    });
    const log = await lastLog(account);
    expect(log).toMatchObject({ outcome: 'threaded' });
    expect((await pass()).counts.sent).toBe(1);
    const [mail] = sentTo(rita);
    // Never to the agent or the account's own addresses.
    const own = sink.mails
      .flatMap((m) => m.recipients)
      .filter((r) => /@desk\.test$/.test(r) || r.endsWith(account.domain));
    expect(own).toEqual([]);
    expect(mail?.parsed.text?.trim()).toBe('We are on our way.');
    expect(mail?.parsed.from?.value[0]?.address).toBe(account.address);
    expect(mail?.parsed.subject).toBe(`[${ticket.reference}] Printer on fire`);
    // The mail sent answers the thread's newest mail; the message shows the agent's mail as it came (its own
    // In-Reply-To), never the header of the mail sent on.
    expect(mail?.header('in-reply-to')).toBe(again);
    const shown = (await messagesOf(account, ticket.uuid)).find((m) => m.id === log.message_id);
    expect(shown?.email).toMatchObject({
      from: { email: 'agent1@desk.test' },
      threading: { matched_by: 'in_reply_to' },
      in_reply_to: opening.slice(1, -1),
      delivery: { status: 'sent', attempts: 1 },
    });
    // Rita's answer to the relayed mail threads back into the ticket.
    await send({
      from: rita,
      to: mail?.parsed.replyTo?.value[0]?.address as string,
      inReplyTo: mail?.header('message-id'),
      text: 'Thanks!',
    });
    expect(await lastLog(account)).toMatchObject({ outcome: 'threaded', ticket_uuid: ticket.uuid });
  });
});
