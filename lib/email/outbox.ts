import { randomBytes } from 'node:crypto';
import type { AccountConfig } from '#lib/accounts/types.ts';
import { type MailIdRecord, sentMailIdPut } from '#lib/data/email.ts';
import { queryMessagesBefore } from '#lib/data/messages.ts';
import {
  AckRefused,
  ClaimLost,
  claimOutbox,
  type Delivery,
  dueOutbox,
  getOutboxItem,
  isSuppressed,
  markBounced,
  type OutboxEntry,
  type OutboxOutcome,
  outboxItemKey,
  queueAck,
  recordOutbox,
  suppressAddress,
} from '#lib/data/outbox.ts';
import { logError } from '#lib/log.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { descriptionMessage, type Message, presentMessage } from '#lib/tickets/messages/message.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { nowMillis, sleep } from '#lib/time.ts';
import { composeMail, type OutgoingMail } from './compose.ts';
import { isOwnAddress, mailSubject, newMailId, sentMailOf } from './reply.ts';
import type { Sender } from './senders.ts';
import { MAIL_CHAIN_DEPTH, mailChain } from './threading.ts';
import { type MailToken, mailToken, tokenAddress } from './tokens.ts';

/**
 * The outbox runner (docs/email.md, "Sending"): reads the mail due (the keys-only due index, never a Scan),
 * claims each, builds it (threading headers from the ticket's mail chain), hands it to the Sender, and records
 * the outcome under its claim: sent (its Message-IDs claimed for the account, so replies thread), due again after
 * a temporary refusal (the schedule), or failed (a permanent refusal, the schedule run out, a suppressed address)
 * with `message.delivery_failed`. At least once: a runner that dies between the send and the record leaves the
 * claim to run out, and the mail is sent again then, with the same Message-ID.
 */

/** The sending retry schedule, seconds (EMAIL_RETRY_SCHEDULE replaces it; operations.md, "E-mail locally"). */
export const DEFAULT_EMAIL_RETRY_SCHEDULE = [60, 300, 900, 3_600, 7_200, 14_400];

export function emailRetrySchedule(): number[] {
  const raw = process.env.EMAIL_RETRY_SCHEDULE;
  if (raw === undefined || raw.trim() === '') return DEFAULT_EMAIL_RETRY_SCHEDULE;
  const steps = raw.split(',').map((s) => Number(s.trim()));
  if (steps.some((s) => !Number.isFinite(s) || s < 0)) {
    throw new Error(`EMAIL_RETRY_SCHEDULE must be seconds, comma-separated (e.g. 1,2,3), got "${raw}"`);
  }
  return steps;
}

/** How long a claim lasts: a send (30 s at most) and its record, with room. */
export const OUTBOX_CLAIM_MS = 60_000;

/** The References of a mail: the ticket's first mail and its newest ones, at most this many. */
const MAX_REFERENCES = 10;

export interface OutboxRunOptions {
  sender: Sender;
  /** The due shards this runner reads (all by default). */
  shards?: readonly number[] | undefined;
  /** Due entries read per pass (default 50). */
  limit?: number;
  /** Mails sent at once (default 8). */
  concurrency?: number;
  /** How long a claim lasts (default OUTBOX_CLAIM_MS). */
  claimMs?: number;
  /** This runner's name in claims (a random one by default). */
  owner?: string;
  onError?: ((error: unknown) => void) | undefined;
  /** Between the send and its record (tests: a runner that dies there). */
  afterSend?: ((entry: OutboxEntry) => Promise<void>) | undefined;
}

export type SendOutcome = 'sent' | 'retrying' | 'failed' | 'skipped';

export interface OutboxPass {
  read: number;
  counts: Record<SendOutcome, number>;
  /** More was due than one pass reads. */
  more: boolean;
}

/** One pass: the mail due now, each claimed, sent and recorded. */
export async function outboxPass(options: OutboxRunOptions): Promise<OutboxPass> {
  const limit = options.limit ?? 50;
  const owner = options.owner ?? `outbox-${randomBytes(6).toString('hex')}`;
  const due = await dueOutbox(nowMillis(), limit, options.shards);
  const counts: Record<SendOutcome, number> = { sent: 0, retrying: 0, failed: 0, skipped: 0 };
  let next = 0;
  const work = async () => {
    for (let i = next++; i < due.length; i = next++) {
      const entry = due[i] as OutboxEntry;
      try {
        counts[await sendOne(entry, { ...options, owner })]++;
      } catch (error) {
        // The store failed the claim, a read or the record: the entry stays, due again when its claim ends.
        (options.onError ?? logError)(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 8, due.length) }, work));
  // Again at once only when a full page was due and this pass did something with it: a page of mail another
  // runner holds (its claims) waits for the next poll, not a busy loop.
  return { read: due.length, counts, more: due.length >= limit && counts.skipped < due.length };
}

/** Passes until `until` or `stopped()`: at once again while more is due, else every `pollMs` (default 250). */
export async function runOutbox(
  until: number,
  options: OutboxRunOptions & { pollMs?: number; stopped?: () => boolean },
): Promise<Record<SendOutcome, number>> {
  const totals: Record<SendOutcome, number> = { sent: 0, retrying: 0, failed: 0, skipped: 0 };
  const owner = options.owner ?? `outbox-${randomBytes(6).toString('hex')}`;
  while (nowMillis() < until && !options.stopped?.()) {
    let more = false;
    try {
      const pass = await outboxPass({ ...options, owner });
      for (const k of Object.keys(totals) as SendOutcome[]) totals[k] += pass.counts[k];
      more = pass.more;
    } catch (error) {
      (options.onError ?? logError)(error);
    }
    if (!more) await sleep(Math.min(options.pollMs ?? 250, Math.max(0, until - nowMillis())));
  }
  return totals;
}

/** A claimed mail, built: what to send and what a sent mail's Message-IDs are recorded as. */
interface Built {
  mail: OutgoingMail;
  /** What the mail's Message-IDs stand for in the account (threading rule 2). */
  mailId: MailIdRecord;
  /** The message (a reply), for its event. */
  message?: Message;
}

/** Claims, builds, sends and records one due mail. */
export async function sendOne(
  entry: OutboxEntry,
  options: OutboxRunOptions & { owner: string },
): Promise<SendOutcome> {
  const now = nowMillis();
  const claimed = await claimOutbox(entry, options.owner, now + (options.claimMs ?? OUTBOX_CLAIM_MS), now);
  if (!claimed) return 'skipped';
  const attempts = claimed.delivery.attempts + 1;
  const failed = (error: string, message?: Message): OutboxOutcome => {
    const delivery: Delivery = { ...claimed.delivery, status: 'failed', attempts };
    return { delivery, error, events: message ? [deliveryFailedEvent(message, delivery, error)] : undefined };
  };
  // The ticket, its mail chain and the suppression of the recipient: read at once (one round trip).
  const to = String(sentMailOf(claimed.item).to[0]);
  const [built, suppressed] = await Promise.all([
    build(entry.accountId, claimed.kind, claimed.item),
    isSuppressed(entry.accountId, to),
  ]);
  if (!built) return record(entry, options.owner, failed('ticket_gone'), 'failed');
  const { mail } = built;
  if (suppressed) {
    return record(entry, options.owner, failed('suppressed: the address bounced', built.message), 'failed');
  }
  const raw = await composeMail(mail);
  const result = await options.sender.send({
    envelopeFrom: mail.envelopeFrom,
    to: mail.to,
    messageId: mail.messageId,
    raw,
  });
  await options.afterSend?.(entry);
  if (result.ok) {
    const delivery: Delivery = {
      status: 'sent',
      attempts,
      provider_message_id: result.providerMessageId,
    };
    const ids = [...new Set([mail.messageId, result.providerMessageId])];
    return record(
      entry,
      options.owner,
      {
        delivery,
        // An agent's reply by mail shows the In-Reply-To of the mail it came as (`email` is that mail).
        inReplyTo: claimed.item.outgoing ? undefined : mail.inReplyTo,
        items: ids.map((id) => sentMailIdPut(entry.accountId, id, built.mailId)),
      },
      'sent',
    );
  }
  const step = emailRetrySchedule()[attempts - 1];
  if (!result.permanent && step !== undefined) {
    return record(
      entry,
      options.owner,
      {
        delivery: { ...claimed.delivery, status: 'queued', attempts },
        nextAtMs: now + step * 1000,
        error: result.error,
      },
      'retrying',
    );
  }
  return record(entry, options.owner, failed(result.error, built.message), 'failed');
}

async function record(
  entry: OutboxEntry,
  owner: string,
  outcome: OutboxOutcome,
  result: SendOutcome,
): Promise<SendOutcome> {
  try {
    await recordOutbox(entry, owner, outcome);
    return result;
  } catch (error) {
    // The claim ran out meanwhile (a stalled store): the runner holding it now decides.
    if (error instanceof ClaimLost) return 'skipped';
    throw error;
  }
}

function deliveryFailedEvent(message: Message, delivery: Delivery, reason: string) {
  return {
    type: 'message.delivery_failed',
    object: presentMessage({ ...message, email: { ...message.email, delivery } }),
    extra: { reason: reason.slice(0, 300) },
    version: 1,
  };
}

/** The mail of a claimed item: a reply (its message, its ticket's chain) or an acknowledgement. */
async function build(
  accountId: string,
  kind: 'reply' | 'ack',
  item: Record<string, unknown>,
): Promise<Built | undefined> {
  const message = item as unknown as Message;
  const [found, newest] = await Promise.all([
    findTicket(accountId, String(item.ticketUuid)),
    kind === 'ack'
      ? []
      : queryMessagesBefore<Message>(accountId, message.ticketUuid, message.number, MAIL_CHAIN_DEPTH),
  ]);
  const ticket = found?.entity;
  if (!ticket) return undefined;
  if (kind === 'ack') return buildAck(accountId, ticket, item);
  const fields = sentMailOf(item);
  const chain = mailChain(ticket, newest);
  return {
    message,
    mail: {
      envelopeFrom: tokenAddress(fields.from.email, mailToken(accountId, ticket.reference, message.number)),
      from: fields.from,
      to: fields.to,
      replyTo: tokenAddress(fields.from.email, mailToken(accountId, ticket.reference)),
      subject: String(fields.subject),
      messageId: String(fields.message_id),
      // As the reply shows it since its commit (threading.ts); a reply queued before that decided it here.
      inReplyTo: (fields.in_reply_to as string | null | undefined) ?? chain.at(-1) ?? null,
      references:
        chain.length > MAX_REFERENCES ? [chain[0] as string, ...chain.slice(1 - MAX_REFERENCES)] : chain,
      text: message.body,
      autoReplied: false,
    },
    mailId: { ticketUuid: ticket.uuid, messageNumber: message.number, messageId: message.id },
  };
}

function buildAck(accountId: string, ticket: Ticket, item: Record<string, unknown>): Built {
  const fields = sentMailOf(item);
  const description = descriptionMessage(ticket);
  const opening = (ticket.descriptionEmail?.email?.message_id as string | null | undefined) ?? null;
  return {
    mail: {
      envelopeFrom: tokenAddress(fields.from.email, mailToken(accountId, ticket.reference, 'ack')),
      from: fields.from,
      to: fields.to,
      replyTo: tokenAddress(fields.from.email, mailToken(accountId, ticket.reference)),
      subject: String(fields.subject),
      messageId: String(fields.message_id),
      inReplyTo: opening,
      references: opening ? [opening] : [],
      text: String(item.text),
      autoReplied: true,
    },
    mailId: { ticketUuid: ticket.uuid, messageNumber: 1, messageId: description.id },
  };
}

/**
 * A ticket opened by mail gets one acknowledgement when the account asks for them (`email.acknowledge`): at most
 * one per ticket, at most 10 per sender per hour (lib/data/outbox.ts queueAck), never to the account's own
 * addresses. Answers whether it was queued.
 */
export async function acknowledge(
  accountId: string,
  config: AccountConfig,
  ticket: Ticket,
  sender: string,
): Promise<'queued' | 'already' | 'capped' | 'off'> {
  const from = config.account.email?.addresses[0];
  if (!config.account.email?.acknowledge || !from || isOwnAddress(config, sender)) return 'off';
  const subject = mailSubject({ reference: ticket.reference, subject: ticket.subject });
  try {
    await queueAck(accountId, ticket.uuid, sender, {
      text:
        `Thank you for writing. Your request is ticket ${ticket.reference}: an agent will answer you soon.\n\n` +
        'To add to it, reply to this mail.',
      email: {
        message_id: newMailId(`ack.${ticket.reference.toLowerCase()}`, from),
        from: { email: from, name: config.account.name },
        to: [sender],
        subject,
      },
    });
    return 'queued';
  } catch (error) {
    if (error instanceof AckRefused) return error.reason;
    throw error;
  }
}

/**
 * A delivery report for mail the service sent: it comes back to the envelope sender whose verified token
 * (lib/email/tokens.ts) names the ticket and the mail (`<reference>.<message number>` or `<reference>.ack`). The
 * mail's delivery becomes `bounced` (`message.delivery_failed` for a reply) and its recipient is suppressed.
 * Answers the ticket and message it concerned, or undefined when the account has no such mail (any more).
 */
export async function bounced(
  accountId: string,
  named: MailToken,
): Promise<{ ticketUuid: string; messageId: string | null } | undefined> {
  if (named.mail === undefined) return undefined;
  const ticket = (await findTicket(accountId, named.reference))?.entity;
  if (!ticket) return undefined;
  const key = outboxItemKey(accountId, ticket.uuid, named.mail);
  const held = await getOutboxItem(key);
  if (!held) return undefined;
  const message = named.mail === 'ack' ? undefined : (held.item as unknown as Message);
  const to = held.item.email ? sentMailOf(held.item).to?.[0] : undefined;
  if (held.delivery.status === 'sent') {
    await markBounced(
      accountId,
      key,
      held.delivery,
      message ? [deliveryFailedEvent(message, { ...held.delivery, status: 'bounced' }, 'bounced')] : [],
    );
  }
  if (to) await suppressAddress(accountId, to, 'bounced');
  return { ticketUuid: ticket.uuid, messageId: message?.id ?? null };
}
