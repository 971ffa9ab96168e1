import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer, { type SendMailOptions } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MailServer, startMailServer } from '#infra/local/mail.ts';
import { agentsFile, createTestAccount, type TestAccount } from '#test/support/accounts.ts';
import { readFeedToEnd } from '#test/support/feed.ts';
import { keyedCaller, useGateway } from '#test/support/http.ts';

/**
 * Rules on the mail channel (decisions.md, "Business rules"; docs/rules.md, "In the change's transaction"): a mail
 * that opens a ticket runs the `created` rules (`channel is email`: the README's billing rule), a requester's
 * mail threaded into a ticket runs the `message` rules with `via: email`, and a rule's reply to automatic mail is
 * skipped (`data.rules_skipped: [{"id", "reason": "automatic_mail"}]`), the rest of the rule applied.
 */
const gateway = useGateway();
let server: MailServer;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'deskpipe-rules-mail-'));
  server = await startMailServer({ port: 0, dir });
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function send(mail: SendMailOptions) {
  await nodemailer
    .createTransport({ host: '127.0.0.1', port: server.port, secure: false, ignoreTLS: true })
    .sendMail(mail);
  await server.idle();
}

async function mailAccount() {
  const domain = `r${randomBytes(5).toString('hex')}.test`;
  const account = await createTestAccount({
    agents: agentsFile(1),
    teams: [{ name: 'Billing' }],
    email: { addresses: [`support@${domain}`] },
  });
  const call = keyedCaller(gateway, account.apiKey);
  const team = ((await call('GET', '/api/teams')).body.data as { id: number }[])[0]?.id as number;
  return { account, call, team, address: `support@${domain}` };
}

const mid = () => `<${randomBytes(8).toString('hex')}@customer.test>`;
const feed = async (account: TestAccount, types: string[]) =>
  (await readFeedToEnd(gateway.call, account.apiKey, { types })).events;

describe('rules on the mail channel', () => {
  it('the billing rule routes a mail that opens a ticket; a requester mail runs the message rules; automatic mail gets no rule reply', async () => {
    const { account, call, team, address } = await mailAccount();
    const billing = await call('POST', '/api/rules', {
      name: 'Billing mail',
      on: 'created',
      conditions: {
        all: [{ field: 'channel', op: 'is', value: 'email' }],
        any: [{ field: 'subject', op: 'contains', value: 'invoice' }],
      },
      actions: [
        { type: 'set', field: 'team_id', value: team },
        { type: 'add_tags', tags: ['billing'] },
      ],
    });
    expect(billing.status, billing.text).toBe(201);
    const ack = await call('POST', '/api/rules', {
      name: 'Thank the requester',
      on: 'message',
      conditions: {
        all: [
          { field: 'via', op: 'is', value: 'email' },
          { field: 'message.author', op: 'is', value: 'requester' },
        ],
      },
      actions: [
        { type: 'add_tags', tags: ['wrote-back'] },
        { type: 'reply', body: 'Thanks, we have it ({{ticket.reference}}).' },
      ],
    });
    expect(ack.status, ack.text).toBe(201);

    const opening = mid();
    await send({
      from: 'rita@customer.test',
      to: address,
      subject: 'Invoice 42',
      messageId: opening,
      text: 'Hi',
    });
    const tickets = (await call('GET', '/api/tickets?per_page=10')).body.data as {
      uuid: string;
      reference: string;
      tags: string[];
      team: { id: number } | null;
    }[];
    expect(tickets).toHaveLength(1);
    const [ticket] = tickets as [(typeof tickets)[number]];
    expect(ticket).toMatchObject({ tags: ['billing'], team: { id: team } });

    // An out-of-office threads in: the message rule fires (its tag) but its reply is skipped, and said so.
    await send({
      from: 'rita@customer.test',
      to: address,
      subject: 'Automatic reply: Invoice 42',
      messageId: mid(),
      inReplyTo: opening,
      headers: { 'Auto-Submitted': 'auto-replied' },
      text: 'I am away.',
    });
    const [, auto] = (await call('GET', `/api/tickets/${ticket.uuid}/messages`)).body.data as {
      body: string;
    }[];
    expect(auto?.body).toBe('I am away.');
    // The requester's own mail: tagged, and answered by mail (the reply in the outbox, threaded to her mail).
    const own = mid();
    await send({
      from: 'rita@customer.test',
      to: address,
      subject: 'Re: Invoice 42',
      messageId: own,
      inReplyTo: opening,
      text: 'Here is the number.',
    });
    const messages = (await call('GET', `/api/tickets/${ticket.uuid}/messages`)).body.data as {
      body: string;
      author: { type: string };
      email?: { in_reply_to: string | null; delivery?: { status: string } };
    }[];
    expect(messages.map((m) => [m.author.type, m.body])).toEqual([
      ['requester', 'Hi'],
      ['requester', 'I am away.'],
      ['requester', 'Here is the number.'],
      ['system', `Thanks, we have it (${ticket.reference}).`],
    ]);
    expect(messages[3]?.email).toMatchObject({
      in_reply_to: own.slice(1, -1),
      delivery: { status: 'queued' },
    });

    const updates = await feed(account, ['ticket.updated']);
    const ackId = ack.body.data.id as number;
    expect(
      updates.map((e) => [
        (e.data as Record<string, unknown>).rules,
        (e.data as Record<string, unknown>).rules_skipped,
      ]),
    ).toEqual([
      [[{ id: ackId, version: 1 }], [{ id: ackId, reason: 'automatic_mail' }]],
      [[{ id: ackId, version: 1 }], undefined],
    ]);
  });
});
