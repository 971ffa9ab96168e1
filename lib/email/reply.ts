import { randomBytes } from 'node:crypto';
import type { AccountConfig } from '#lib/accounts/types.ts';
import { QUEUED } from '#lib/data/outbox.ts';
import { splitAddress } from './addresses.ts';
import { isSystemAddress } from './classify.ts';

/**
 * Which messages the service e-mails (decisions.md, "The e-mail channel", "Sending"): an agent's public message
 * on a ticket whose requester has an e-mail address, when the account has an address to send from; never to one
 * of the account's own addresses or a system sender. Decided in the message's commit: the message is written with
 * its mail's fields (`email`, delivery `queued`) and is in the outbox from then on (lib/data/outbox.ts).
 */

/** What a reply's mail needs of its ticket. */
export interface MailTicket {
  reference: string;
  subject: string;
  requester: { email: string | null; name: string | null };
}

/** The `email` fields of an agent's reply to be e-mailed, or undefined when it is not to be sent. */
export function replyMailFields(
  config: AccountConfig,
  ticket: MailTicket,
  messageId: string,
): Record<string, unknown> | undefined {
  const from = config.account.email?.addresses[0];
  const to = ticket.requester.email?.trim().toLowerCase() ?? '';
  if (!from || !to.includes('@')) return undefined;
  if (isOwnAddress(config, to) || isSystemAddress(to)) return undefined;
  return {
    message_id: newMailId(messageId, from),
    from: { email: from, name: config.account.name },
    to: [to],
    cc: [],
    subject: mailSubject(ticket),
    in_reply_to: null,
    threading: null,
    automatic: null,
    quoted_text_removed: false,
    delivery: QUEUED,
  };
}

/**
 * The fields a reply's message gets to be e-mailed, or none when it is not to be sent (replyMailFields). A reply
 * posted through the API: `email` is the mail sent. An agent's reply that came by mail (`received`: the mail's
 * fields; decisions.md, "The e-mail channel"): `email` stays the mail received, with the sent one's `delivery`,
 * and what is sent (its Message-ID, From, To, subject) is kept beside it as `outgoing` (never shown).
 */
export function replyMail(
  config: AccountConfig,
  ticket: MailTicket,
  messageId: string,
  received?: { email: Record<string, unknown> },
): Record<string, unknown> | undefined {
  const sent = replyMailFields(config, ticket, messageId);
  if (!sent) return undefined;
  if (!received) return { email: sent, attachments: [] };
  const { message_id, from, to, subject } = sent;
  return {
    email: { ...received.email, delivery: sent.delivery },
    outgoing: { message_id, from, to, subject },
  };
}

/** What a mail of the outbox is sent as: an agent's reply by mail keeps it in `outgoing`, any other in `email`. */
export const sentMailOf = (item: Record<string, unknown>) =>
  (item.outgoing ?? item.email) as Record<string, unknown> & {
    from: { email: string; name: string | null };
    to: string[];
  };

/** The subject of every mail about a ticket: `[<reference>] <subject>`. */
export const mailSubject = (ticket: Pick<MailTicket, 'reference' | 'subject'>) =>
  `[${ticket.reference}] ${ticket.subject}`;

/**
 * A Message-ID of the service's own, in the domain of the address it is sent from; kept without its angle
 * brackets, as the ids of received mail are (lib/email/header-values.ts messageIds), and bracketed in the header.
 */
export const newMailId = (local: string, from: string) =>
  `${local}.${randomBytes(6).toString('hex')}@${from.slice(from.lastIndexOf('@') + 1)}`;

/** One of the account's addresses, or its `+` form. */
export function isOwnAddress(config: AccountConfig, address: string): boolean {
  const own = new Set(config.account.email?.addresses ?? []);
  return own.has(splitAddress(address).base);
}
