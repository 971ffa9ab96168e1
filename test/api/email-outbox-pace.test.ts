import { randomBytes } from 'node:crypto';
import type { SESv2Client } from '@aws-sdk/client-sesv2';
import { describe, expect, it } from 'vitest';
import { outboxItemKey, outboxState } from '#lib/data/outbox.ts';
import { getMessageItem } from '#lib/data/tickets/messages.ts';
import { SendPace } from '#lib/email/outbox/pace.ts';
import { outboxPass } from '#lib/email/outbox.ts';
import { type Sender, sesSender } from '#lib/email/senders.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import type { Message } from '#lib/tickets/messages/message.ts';
import { postMessage } from '#lib/tickets/messages/post.ts';
import { nowMillis } from '#lib/time.ts';
import { agentsFile, useTestAccount } from '#test/support/accounts.ts';
import { useManualClock } from '#test/support/clock.ts';
import { useRelaySink } from '#test/support/smtp-sink.ts';
import { waitFor } from '#test/support/wait.ts';

/**
 * The outbox paced to the sending quota (issue 40; docs/email.md, "Pace and fair shares"): a throttle answer, from
 * the local mail.relay (421, SES's SMTP 454) or SES (TooManyRequestsException), puts the mail back with no attempt
 * counted and holds the runner's sends; EMAIL_SEND_RATE's token bucket sends a backlog at the quota's rate.
 */
const domain = `p${randomBytes(5).toString('hex')}.test`;
const account = useTestAccount({
  ticket_prefix: 'OP',
  agents: agentsFile(1),
  email: { addresses: [`support@${domain}`] },
});
const clock = useManualClock();
const mail = useRelaySink();

/** A reply on a new ticket: queued, due now. */
async function queuedReply(n: number) {
  const ticket = await createTicket(account.accountId, {
    subject: `Pace ${n}`,
    description: 'Help.',
    requester_email: `c${n}.${randomBytes(3).toString('hex')}@customer.test`,
  });
  const posted = await postMessage(account.accountId, ticket.uuid, {
    body: `Reply ${n}`,
    author: 'agent',
    agent_id: 1,
  });
  return { ticket, message: posted.message, customer: ticket.requester.email as string };
}

const deliveryOf = async (ticketUuid: string, number: number) =>
  (await getMessageItem<Message>(account.accountId, ticketUuid, number))?.email?.delivery;

/** SES v2 answering every SendEmail with `name` (as the SDK throws it, after its own retries). */
const sesAnswering = (name: string) =>
  sesSender('set', {
    send: async () => {
      throw Object.assign(new Error('Maximum sending rate exceeded.'), { name });
    },
    destroy: () => undefined,
  } as unknown as SESv2Client);

describe('a throttle is not an attempt', () => {
  /** The mail.relay answering every RCPT with `code` until the test says otherwise. */
  const relayAnswering = (code: number) => {
    mail.sink.answer = () => code;
    return mail.relay;
  };
  const throttles: [string, () => Sender, RegExp][] = [
    ['the mail.relay answering 421', () => relayAnswering(421), /^throttled: 421/],
    ["SES's SMTP interface answering 454", () => relayAnswering(454), /^throttled: 454/],
    ['SES answering TooManyRequestsException', () => sesAnswering('TooManyRequestsException'), /Too/],
  ];
  for (const [what, throttling, error] of throttles) {
    it(`${what}: the mail goes back with its attempts as they were, and is sent once the hold ends`, async () => {
      const { ticket, message, customer } = await queuedReply(1);
      const pace = new SendPace();
      const sender = throttling();
      const first = await outboxPass({ sender, pace });
      expect(first.counts).toMatchObject({ throttled: 1, retrying: 0, sent: 0 });
      expect(await deliveryOf(ticket.uuid, message.number)).toEqual({
        status: 'queued',
        attempts: 0,
        provider_message_id: null,
      });
      const state = await outboxState(outboxItemKey(account.accountId, ticket.uuid, message.number));
      expect(state?.error).toMatch(error);
      // Due again when the runner's hold ends (1 s), not after the retry schedule's first step (60 s).
      expect(state?.due).toBe(nowMillis() + 1_000);
      expect((await outboxPass({ sender: mail.relay, pace })).read).toBe(0);
      mail.sink.answer = undefined;
      await clock().advance(1_000);
      expect((await outboxPass({ sender: mail.relay, pace })).counts.sent).toBe(1);
      expect(await deliveryOf(ticket.uuid, message.number)).toMatchObject({ status: 'sent', attempts: 1 });
      expect(mail.sink.mails.filter((m) => m.recipients.includes(customer))).toHaveLength(1);
    });
  }

  it('other refusals still count: a 451 is an attempt, as before', async () => {
    const { ticket, message } = await queuedReply(2);
    mail.sink.answer = () => 451;
    expect((await outboxPass({ sender: mail.relay, pace: new SendPace() })).counts.retrying).toBe(1);
    mail.sink.answer = undefined;
    expect(await deliveryOf(ticket.uuid, message.number)).toMatchObject({ status: 'queued', attempts: 1 });
    await clock().advance(60_000);
    expect((await outboxPass({ sender: mail.relay })).counts.sent).toBe(1);
  });
});

describe('EMAIL_SEND_RATE', () => {
  it('sends a backlog at the quota: 8 mails at 2 a second go over 3 s of the clock, 2 at once then one every 500 ms', async () => {
    for (let n = 0; n < 8; n++) await queuedReply(10 + n);
    const start = nowMillis();
    const at: number[] = [];
    const sender: Sender = {
      name: 'memory',
      send: async (mail) => {
        at.push(nowMillis() - start);
        return { ok: true, providerMessageId: mail.messageId };
      },
      close: () => undefined,
    };
    const pass = outboxPass({ sender, pace: new SendPace(2) });
    // The clock moves half a second once each send has gone: the pass reads, composes and records between sends
    // in real time, which an advance of the whole 5 s could overtake on a loaded machine (a run at load ~8 saw the
    // first two at 500 ms). Each step lets exactly one more through; the times say when.
    await waitFor(() => at.length >= 2, { timeout: 20_000, label: 'the first two mails' });
    for (let sent = 2; sent < 8; sent++) {
      await clock().advance(500);
      await waitFor(() => at.length > sent, { timeout: 20_000, label: `mail ${sent + 1}` });
    }
    expect((await pass).counts.sent).toBe(8);
    expect(at.sort((a, b) => a - b)).toEqual([0, 0, 500, 1000, 1500, 2000, 2500, 3000]);
  });
});
