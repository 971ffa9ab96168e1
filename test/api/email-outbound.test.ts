import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SNSEvent } from 'aws-lambda';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { handler as inboundFunction } from '#functions/email-inbound.ts';
import { type MailServer, startMailServer } from '#infra/local/mail.ts';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import { outboxItemKey, outboxState } from '#lib/data/outbox.ts';
import { acknowledge, type OutboxRunOptions, outboxPass } from '#lib/email/outbox.ts';
import { folderSender, type Sender, smtpSender } from '#lib/email/senders.ts';
import { mailToken, tokenAddress } from '#lib/email/tokens.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { nowMillis } from '#lib/time.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { atTime } from '#test/support/clock.ts';
import { lambdaContext } from '#test/support/events.ts';
import { useGateway } from '#test/support/http.ts';
import { type SmtpSink, startSmtpSink } from '#test/support/smtp-sink.ts';

/**
 * The e-mail channel's sending side (decisions.md, "The e-mail channel", "Sending"; docs/email.md): replies
 * committed through the API, the outbox runner passes called by the test (no background loop, no clock waits
 * but the one claim that must run out), a real SMTP relay on 127.0.0.1 (test/support/smtp-sink.ts), and the
 * replies' replies through npm start's real inbound SMTP server.
 */
const gateway = useGateway();
let inbound: MailServer;
let sink: SmtpSink;
let relay: Sender;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-out-'));
  [inbound, sink] = await Promise.all([startMailServer({ port: 0, dir }), startSmtpSink()]);
  relay = smtpSender(sink.url);
  // Every temporary refusal is retried at the next pass: the schedule's steps are not what is tested.
  process.env.EMAIL_RETRY_SCHEDULE = '0,0,0';
});
afterEach(() => {
  sink.answer = undefined;
});
afterAll(async () => {
  delete process.env.EMAIL_RETRY_SCHEDULE;
  relay?.close();
  await Promise.all([inbound?.stop(), sink?.stop()]);
  await rm(dir, { recursive: true, force: true });
});

// biome-ignore lint/suspicious/noExplicitAny: API answers read as JSON
type Json = Record<string, any>;

async function mailAccount(extra: Record<string, unknown> = {}) {
  const domain = `o${randomBytes(5).toString('hex')}.test`;
  const account = await createTestAccount({
    ticket_prefix: 'OB',
    agents: agentsFile(1),
    email: { addresses: [`support@${domain}`] },
    ...extra,
  });
  return { ...account, address: `support@${domain}`, domain };
}

/** Mail in, as a customer's client sends it, processed before this answers. */
async function mailIn(mail: SendMailOptions) {
  await nodemailer
    .createTransport({ host: '127.0.0.1', port: inbound.port, secure: false, ignoreTLS: true })
    .sendMail(mail);
  await inbound.idle();
}

/** One outbox pass over the mail of the file's table (test/support/file-table.ts). */
const pass = (options: Partial<OutboxRunOptions> = {}) => outboxPass({ sender: relay, ...options });

const sentTo = (address: string) => sink.mails.filter((m) => m.recipients.includes(address));
const mid = () => `<${randomBytes(8).toString('hex')}@customer.test>`;
/** A Message-ID as a header carries it (ids are kept without their angle brackets). */
const header = (id: string) => `<${id}>`;

/** A delivery report as a relay sends it (the null sender) to `to`, about `customer`. */
const bounceReport = (to: string, customer: string) =>
  mailIn({
    envelope: { from: '', to },
    from: 'MAILER-DAEMON@customer.test',
    to,
    subject: 'Undelivered Mail Returned to Sender',
    text: `550 5.1.1 <${customer}>: Recipient address rejected`,
  });

/** One SES notification (bounce, complaint) as the feedback topic hands it to the inbound function. */
const sesFeedback = (notification: Record<string, unknown>) =>
  inboundFunction(
    {
      Records: [{ EventSource: 'aws:sns', Sns: { Message: JSON.stringify(notification) } }],
    } as unknown as SNSEvent,
    lambdaContext,
  );

async function reply(account: TestAccount, ticket: string, body: string) {
  const r = await gateway.call('POST', `/api/tickets/${ticket}/messages`, {
    key: account.apiKey,
    body: { body, author: 'agent', agent_id: 1 },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.data as Json;
}

async function messageOf(account: TestAccount, ticket: string, id: string) {
  const r = await gateway.call('GET', `/api/tickets/${ticket}/messages/${id}`, { key: account.apiKey });
  expect(r.status, r.text).toBe(200);
  return r.body.data as Json;
}

async function newTicketByMail(account: Awaited<ReturnType<typeof mailAccount>>, from: string) {
  const opening = mid();
  await mailIn({ from, to: account.address, subject: 'Printer on fire', messageId: opening, text: 'Help.' });
  const r = await gateway.call('GET', '/api/email/inbound?limit=1', { key: account.apiKey });
  const [log] = r.body.data as Json[];
  expect(log?.outcome).toBe('new_ticket');
  const ticket = (await gateway.call('GET', `/api/tickets/${log?.ticket_uuid}`, { key: account.apiKey })).body
    .data as Json;
  return { ticket, opening };
}

async function eventsOf(account: TestAccount, type: string, messageIds?: string[]): Promise<Json[]> {
  const events: Json[] = [];
  let after: string | null = null;
  do {
    const r = await gateway.call(
      'GET',
      `/api/events?type=${type}&limit=100${after ? `&after=${after}` : ''}`,
      {
        key: account.apiKey,
      },
    );
    expect(r.status, r.text).toBe(200);
    events.push(...(r.body.data as Json[]));
    after = r.body.next_cursor;
  } while (after);
  return messageIds ? events.filter((e) => messageIds.includes(e.data.object.id)) : events;
}

// One account for the replies' tests: each has its own customer and ticket, and leaves nothing due.
let shared: Awaited<ReturnType<typeof mailAccount>>;
beforeAll(async () => {
  shared = await mailAccount();
});

describe('replies go out as mail', () => {
  it('an agent reply is sent once, after its commit, with its threading headers; a reply to it threads back', async () => {
    const account = shared;
    const customer = `rita.${randomBytes(3).toString('hex')}@customer.test`;
    const { ticket, opening } = await newTicketByMail(account, `"Rita" <${customer}>`);
    const posted = await reply(account, ticket.uuid, 'We are on it.\nPlease unplug it.');
    expect(posted.email).toMatchObject({
      from: { email: account.address },
      to: [customer],
      subject: `[${ticket.reference}] Printer on fire`,
      delivery: { status: 'queued', attempts: 0, provider_message_id: null },
    });
    // From its commit on, the reply names the mail it answers: the In-Reply-To its mail is sent with.
    const [created] = await eventsOf(account, 'message.created', [posted.id]);
    expect([posted.email.in_reply_to, created?.data.object.email.in_reply_to]).toEqual([
      opening.slice(1, -1),
      opening.slice(1, -1),
    ]);
    expect(sentTo(customer)).toHaveLength(0);

    expect((await pass()).counts.sent).toBe(1);
    expect((await pass()).read).toBe(0);
    const [mail] = sentTo(customer);
    expect(sentTo(customer)).toHaveLength(1);
    const token = tokenAddress(account.address, mailToken(account.accountId, ticket.reference));
    expect(mail?.header('message-id')).toBe(header(posted.email.message_id));
    expect(mail?.header('in-reply-to')).toBe(opening);
    expect(mail?.header('references')).toBe(opening);
    expect(mail?.parsed.replyTo?.value[0]?.address).toBe(token);
    expect(mail?.parsed.from?.value[0]?.address).toBe(account.address);
    expect(mail?.parsed.subject).toBe(`[${ticket.reference}] Printer on fire`);
    expect(mail?.parsed.text?.trim()).toBe('We are on it.\nPlease unplug it.');
    expect(mail?.header('auto-submitted')).toBeUndefined();
    // Delivery reports come back to the tagged + form that names the mail.
    expect(mail?.envelopeFrom).toBe(
      tokenAddress(account.address, mailToken(account.accountId, ticket.reference, 2)),
    );
    const shown = await messageOf(account, ticket.uuid, posted.id);
    expect(shown.email).toMatchObject({
      in_reply_to: opening.slice(1, -1),
      delivery: { status: 'sent', attempts: 1, provider_message_id: posted.email.message_id },
    });

    // The customer answers the mail (to the plain address, quoting its Message-ID): it threads by in_reply_to.
    await mailIn({
      from: customer,
      to: account.address,
      subject: 'Re: something else',
      inReplyTo: posted.email.message_id,
      references: [opening, posted.email.message_id],
      text: 'Unplugged.',
    });
    const list = await gateway.call('GET', `/api/tickets/${ticket.uuid}/messages`, { key: account.apiKey });
    const last = (list.body.data as Json[]).at(-1);
    expect(last).toMatchObject({ body: 'Unplugged.', email: { threading: { matched_by: 'in_reply_to' } } });

    // Mail to the envelope sender's form (`+<ref>.<n>`, where reports go) from a person threads by that token too.
    await mailIn({
      from: customer,
      to: mail?.envelopeFrom as string,
      subject: 'To the bounce address',
      text: 'Hi.',
    });
    const viaEnvelope = (
      await gateway.call('GET', `/api/tickets/${ticket.uuid}/messages`, { key: account.apiKey })
    ).body.data.at(-1);
    expect(viaEnvelope).toMatchObject({ body: 'Hi.', email: { threading: { matched_by: 'token_address' } } });

    // A second reply carries the whole chain: In-Reply-To the customer's answer, References from the opening.
    const good = await reply(account, ticket.uuid, 'Good.');
    await pass();
    const second = sentTo(customer).at(-1);
    expect(second?.header('in-reply-to')).toBe(header(viaEnvelope.email.message_id));
    // The headers the mail had, as the answer showed them and as the message shows them once sent.
    const sentGood = await messageOf(account, ticket.uuid, good.id);
    expect([header(good.email.in_reply_to), header(sentGood.email.in_reply_to)]).toEqual([
      second?.header('in-reply-to'),
      second?.header('in-reply-to'),
    ]);
    expect(second?.header('references')?.split(/\s+/)).toEqual([
      opening,
      header(posted.email.message_id),
      header(last?.email.message_id),
      header(viaEnvelope.email.message_id),
    ]);
  });

  it('the relay refusing (451) or unreachable for a while: delivered later, every attempt counted', async () => {
    const account = shared;
    const customer = `temp.${randomBytes(3).toString('hex')}@customer.test`;
    const { ticket } = await newTicketByMail(account, customer);
    const posted = await reply(account, ticket.uuid, 'Try this.');
    const closed = smtpSender('smtp://127.0.0.1:1');
    try {
      expect((await pass({ sender: closed })).counts.retrying).toBe(1);
    } finally {
      closed.close();
    }
    sink.answer = () => 451;
    expect((await pass()).counts.retrying).toBe(1);
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery).toEqual({
      status: 'queued',
      attempts: 2,
      provider_message_id: null,
    });
    const state = await outboxState(outboxItemKey(account.accountId, ticket.uuid, 2));
    expect(state?.error).toMatch(/^451/);
    sink.answer = undefined;
    expect((await pass()).counts.sent).toBe(1);
    expect(sentTo(customer)).toHaveLength(1);
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery).toMatchObject({
      status: 'sent',
      attempts: 3,
    });
    expect(await eventsOf(account, 'message.delivery_failed', [posted.id])).toHaveLength(0);
  });

  it('a permanent refusal (550) fails the delivery at once and writes message.delivery_failed; the schedule run out too', async () => {
    const account = shared;
    const customer = `gone.${randomBytes(3).toString('hex')}@customer.test`;
    const { ticket } = await newTicketByMail(account, customer);
    const posted = await reply(account, ticket.uuid, 'Hello?');
    sink.answer = () => 550;
    expect((await pass()).counts.failed).toBe(1);
    expect((await pass()).read).toBe(0);
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery).toEqual({
      status: 'failed',
      attempts: 1,
      provider_message_id: null,
    });
    const [event] = await eventsOf(account, 'message.delivery_failed', [posted.id]);
    expect(event?.data).toMatchObject({
      object: { id: posted.id, email: { delivery: { status: 'failed', attempts: 1 } } },
      reason: expect.stringMatching(/^550/),
    });

    // 451 four times with three retries in the schedule: failed after the fourth attempt.
    const again = await reply(account, ticket.uuid, 'Anyone?');
    sink.answer = () => 451;
    for (let i = 0; i < 4; i++) await pass();
    expect((await messageOf(account, ticket.uuid, again.id)).email.delivery).toMatchObject({
      status: 'failed',
      attempts: 4,
    });
    expect(await eventsOf(account, 'message.delivery_failed', [posted.id, again.id])).toHaveLength(2);
    expect(sentTo(customer)).toHaveLength(0);
  });

  it('a runner that dies between the send and its record: the mail goes again once the claim runs out, with the same Message-ID', async () => {
    const account = shared;
    const customer = `twice.${randomBytes(3).toString('hex')}@customer.test`;
    const { ticket } = await newTicketByMail(account, customer);
    const posted = await reply(account, ticket.uuid, 'At least once.');
    const claimMs = 60_000;
    const died = await pass({
      claimMs,
      afterSend: () => Promise.reject(new Error('killed between the send and its record')),
      onError: () => undefined,
    });
    expect(died.counts).toMatchObject({ sent: 0, failed: 0 });
    expect(sentTo(customer)).toHaveLength(1);
    // While the dead runner's claim lasts, no other runner sends it.
    expect((await pass()).counts.sent).toBe(0);
    // A runner past the claim's end takes it over.
    expect((await atTime(nowMillis() + claimMs + 1, () => pass())).counts.sent).toBe(1);
    const copies = sentTo(customer);
    expect(copies).toHaveLength(2);
    expect(copies[1]?.header('message-id')).toBe(copies[0]?.header('message-id'));
    expect(copies[0]?.header('message-id')).toBe(header(posted.email.message_id));
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery).toMatchObject({
      status: 'sent',
    });
    expect((await pass()).read).toBe(0);
  });

  it('never to the account’s own addresses or a system sender; internal notes and requester messages are not mail', async () => {
    const account = shared;
    for (const requester of [`support+x@${account.domain}`, 'no-reply@customer.test']) {
      const r = await gateway.call('POST', '/api/tickets', {
        key: account.apiKey,
        body: { subject: 'Loop?', description: 'x', requester_email: requester },
      });
      expect(r.status, r.text).toBe(201);
      const posted = await reply(account, r.body.ticket.uuid, 'Not mailed.');
      expect(posted.email).toBeUndefined();
    }
    const { ticket } = await newTicketByMail(
      account,
      `plain.${randomBytes(3).toString('hex')}@customer.test`,
    );
    const note = await gateway.call('POST', `/api/tickets/${ticket.uuid}/messages`, {
      key: account.apiKey,
      body: { body: 'internal', author: 'agent', agent_id: 1, visibility: 'internal' },
    });
    expect(note.body.data.email).toBeUndefined();
    expect((await pass()).read).toBe(0);
  });

  it('a bounce marks the delivery bounced, writes the event and suppresses the address until it writes in again', async () => {
    const account = shared;
    const customer = `bounce.${randomBytes(3).toString('hex')}@customer.test`;
    const { ticket } = await newTicketByMail(account, customer);
    const posted = await reply(account, ticket.uuid, 'Will bounce.');
    await pass();
    const [sent] = sentTo(customer);
    // The report, as a relay sends it: the null sender, to the envelope sender of the mail.
    await bounceReport(sent?.envelopeFrom as string, customer);
    const [log] = (await gateway.call('GET', '/api/email/inbound?limit=1', { key: account.apiKey })).body
      .data;
    expect(log).toMatchObject({ outcome: 'bounce', ticket_uuid: ticket.uuid, message_id: posted.id });
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery.status).toBe('bounced');
    const [event] = await eventsOf(account, 'message.delivery_failed', [posted.id]);
    expect(event?.data).toMatchObject({ object: { id: posted.id }, reason: 'bounced' });

    const muted = await reply(account, ticket.uuid, 'Suppressed.');
    expect((await pass()).counts.failed).toBe(1);
    expect((await messageOf(account, ticket.uuid, muted.id)).email.delivery.status).toBe('failed');
    expect(sentTo(customer)).toHaveLength(1);

    await mailIn({
      from: customer,
      to: account.address,
      subject: `Re: [${ticket.reference}]`,
      text: 'Back.',
    });
    await reply(account, ticket.uuid, 'Welcome back.');
    expect((await pass()).counts.sent).toBe(1);
    expect(sentTo(customer)).toHaveLength(2);
  });

  it('a delivery report to any other address than the tagged envelope sender (a guessed one) changes nothing and is logged unverified', async () => {
    const account = shared;
    const customer = `guessed.${randomBytes(3).toString('hex')}@customer.test`;
    const { ticket } = await newTicketByMail(account, customer);
    const posted = await reply(account, ticket.uuid, 'Delivered.');
    await pass();
    const [sent] = sentTo(customer);
    const ref = ticket.reference.toLowerCase();
    const forged = [
      `support+${ref}.2@${account.domain}`, // the untagged form a stranger can guess
      `support+${ref}.2-aaaaaaaa@${account.domain}`, // a made-up tag
      sent?.envelopeFrom.replace(`.2-`, '.3-') as string, // another mail's form with this mail's tag
      account.address,
    ];
    for (const to of forged) {
      await bounceReport(to, customer);
      const [log] = (await gateway.call('GET', '/api/email/inbound?limit=1', { key: account.apiKey })).body
        .data;
      expect(log, to).toMatchObject({ outcome: 'bounce', reason: 'unverified', ticket_uuid: null });
    }
    // SES feedback whose source is not a tagged envelope sender: nothing either.
    const notify = (source: string) =>
      sesFeedback({
        eventType: 'Bounce',
        mail: { source, destination: [customer] },
        bounce: { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: customer }] },
      });
    for (const source of forged) await notify(source);
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery.status).toBe('sent');
    expect(await eventsOf(account, 'message.delivery_failed', [posted.id])).toHaveLength(0);
    await reply(account, ticket.uuid, 'Still reachable.');
    expect((await pass()).counts.sent).toBe(1);
    expect(sentTo(customer)).toHaveLength(2);
  });

  it("deployed, SES's bounce and complaint notifications (the feedback topic, to the inbound function) mark and suppress as a report mailed back does", async () => {
    const account = shared;
    const customer = `ses.${randomBytes(3).toString('hex')}@customer.test`;
    const { ticket } = await newTicketByMail(account, customer);
    const posted = await reply(account, ticket.uuid, 'Will bounce at SES.');
    await pass();
    const [sent] = sentTo(customer);
    // SES keeps the envelope sender (`support+<ref>.<n>-<tag>@…`) as the notification's mail.source.
    const notify = (notification: Record<string, unknown>) =>
      sesFeedback({ mail: { source: sent?.envelopeFrom, destination: [customer] }, ...notification });
    // A transient bounce is SES's to retry: nothing changes.
    await notify({
      eventType: 'Bounce',
      bounce: { bounceType: 'Transient', bouncedRecipients: [{ emailAddress: customer }] },
    });
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery.status).toBe('sent');
    // A permanent one, delivered twice by SNS: bounced once, one event, the address suppressed.
    for (let i = 0; i < 2; i++) {
      await notify({
        eventType: 'Bounce',
        bounce: { bounceType: 'Permanent', bouncedRecipients: [{ emailAddress: customer }] },
      });
    }
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery.status).toBe('bounced');
    expect(await eventsOf(account, 'message.delivery_failed', [posted.id])).toHaveLength(1);
    const muted = await reply(account, ticket.uuid, 'Suppressed.');
    expect((await pass()).counts.failed).toBe(1);
    expect((await messageOf(account, ticket.uuid, muted.id)).email.delivery.status).toBe('failed');

    // A complaint suppresses the complaining recipient; the mail was delivered, so its delivery stays sent.
    const other = `complains.${randomBytes(3).toString('hex')}@customer.test`;
    const second = await newTicketByMail(account, other);
    const answered = await reply(account, second.ticket.uuid, 'Hello.');
    await pass();
    const [delivered] = sentTo(other);
    await sesFeedback({
      eventType: 'Complaint',
      mail: { source: delivered?.envelopeFrom, destination: [other] },
      complaint: { complainedRecipients: [{ emailAddress: other }] },
    });
    expect((await messageOf(account, second.ticket.uuid, answered.id)).email.delivery.status).toBe('sent');
    await reply(account, second.ticket.uuid, 'Anyone?');
    expect((await pass()).counts.failed).toBe(1);
    expect(sentTo(other)).toHaveLength(1);
  });
});

describe('acknowledgements', () => {
  it('one per ticket, Auto-Submitted, threaded to the opening mail; an auto-responder loop stops at 10 per sender per hour', async () => {
    const domain = `a${randomBytes(5).toString('hex')}.test`;
    const acked = await createTestAccount({
      ticket_prefix: 'AK',
      agents: agentsFile(1),
      email: { addresses: [`support@${domain}`], acknowledge: true },
    });
    const address = `support@${domain}`;
    const responder = `bot.${randomBytes(3).toString('hex')}@customer.test`;
    const opening = mid();
    await mailIn({ from: responder, to: address, subject: 'Question', messageId: opening, text: 'Hi.' });
    expect((await pass()).counts.sent).toBe(1);
    const [ack] = sentTo(responder);
    expect(ack?.header('auto-submitted')).toBe('auto-replied');
    expect(ack?.header('in-reply-to')).toBe(opening);
    expect(ack?.parsed.subject).toMatch(/^\[AK-\d+\] Question$/);

    // At most once per ticket: the same ticket again is refused.
    const [log] = (await gateway.call('GET', '/api/email/inbound?limit=1', { key: acked.apiKey })).body.data;
    const config = await getAccountConfig(acked.accountId);
    const ticket = (await findTicket(acked.accountId, log.ticket_uuid))?.entity;
    expect(await acknowledge(acked.accountId, config as never, ticket as never, responder)).toBe('already');

    // A naive auto-responder answers every mail it gets with a new mail (no Auto-Submitted, no threading): each
    // opens a ticket, and each ticket's acknowledgement would answer it, but only 10 a sender an hour go out.
    for (let round = 0; round < 15; round++) {
      const got = sentTo(responder).length;
      await mailIn({ from: responder, to: address, subject: `Auto reply ${round}`, text: 'I am away.' });
      await pass();
      if (sentTo(responder).length === got) break;
    }
    expect(sentTo(responder)).toHaveLength(10);
    const logs = (await gateway.call('GET', '/api/email/inbound?limit=100', { key: acked.apiKey })).body.data;
    expect(logs).toHaveLength(11);
    expect((await pass()).read).toBe(0);

    // A well-behaved auto-responder (RFC 3834) opens nothing and is never answered.
    await mailIn({
      from: `other.${randomBytes(3).toString('hex')}@customer.test`,
      to: address,
      subject: 'Out of office',
      headers: { 'Auto-Submitted': 'auto-replied' },
      text: 'Away.',
    });
    expect((await pass()).read).toBe(0);

    // A bounce storm (a relay sending reports of mail nobody here sent, 20 at once): each one logged `bounce`,
    // no ticket opened, nothing sent back.
    const tickets = (await gateway.call('GET', '/api/tickets?per_page=1', { key: acked.apiKey })).body.meta
      ?.total;
    const sent = sink.mails.length;
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        mailIn({
          envelope: { from: '', to: address },
          from: 'MAILER-DAEMON@relay.test',
          to: address,
          subject: `Undelivered Mail Returned to Sender ${i}`,
          text: '550 5.1.1 <someone@elsewhere.test>: Recipient address rejected',
        }),
      ),
    );
    expect((await pass()).read).toBe(0);
    expect(sink.mails.length).toBe(sent);
    const storm = (await gateway.call('GET', '/api/email/inbound?limit=20', { key: acked.apiKey })).body.data;
    expect(storm.map((r: Json) => [r.outcome, r.ticket_uuid])).toEqual(Array(20).fill(['bounce', null]));
    expect(
      (await gateway.call('GET', '/api/tickets?per_page=1', { key: acked.apiKey })).body.meta?.total,
    ).toBe(tickets);
  });
});

describe('acknowledgements per sender', () => {
  it('are capped per address without its +tag, whatever its case: victim+0..11@ get 10 in all', async () => {
    const domain = `c${randomBytes(5).toString('hex')}.test`;
    const acked = await createTestAccount({
      ticket_prefix: 'AC',
      agents: agentsFile(1),
      email: { addresses: [`support@${domain}`], acknowledge: true },
    });
    const victim = `victim${randomBytes(3).toString('hex')}`;
    for (let i = 0; i < 12; i++) {
      const from = `${i % 2 ? victim.toUpperCase() : victim}+${i}@customer.test`;
      await mailIn({ from, to: `support@${domain}`, subject: `Forged ${i}`, text: 'x' });
    }
    const logs = (await gateway.call('GET', '/api/email/inbound?limit=100', { key: acked.apiKey })).body.data;
    expect(logs.map((l: Json) => l.outcome)).toEqual(Array(12).fill('new_ticket'));
    expect((await pass()).counts.sent).toBe(10);
    const toVictim = sink.mails.filter((m) =>
      m.recipients.some((r) => r.toLowerCase().startsWith(`${victim}+`)),
    );
    expect(toVictim).toHaveLength(10);
  });
});

describe('without a relay', () => {
  it('writes .eml files to the folder, and the delivery is sent', async () => {
    const account = shared;
    const { ticket } = await newTicketByMail(account, `eml.${randomBytes(3).toString('hex')}@customer.test`);
    const posted = await reply(account, ticket.uuid, 'To a file.');
    const folder = join(dir, 'sent');
    const sender = folderSender(folder);
    expect((await pass({ sender })).counts.sent).toBe(1);
    const [file] = await readdir(folder);
    const raw = await readFile(join(folder, file as string), 'utf8');
    expect(raw).toContain(`Message-ID: <${posted.email.message_id}>`);
    expect((await messageOf(account, ticket.uuid, posted.id)).email.delivery.status).toBe('sent');
  });
});
