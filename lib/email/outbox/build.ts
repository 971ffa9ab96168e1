import type { MailIdRecord } from '#lib/data/mail/message-ids.ts';
import { queryMessagesBefore } from '#lib/data/tickets/messages.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { descriptionMessage, type Message } from '#lib/tickets/messages/message.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import type { OutgoingMail } from '../compose.ts';
import { sentMailOf } from '../reply.ts';
import { MAIL_CHAIN_DEPTH, mailChain } from '../threading.ts';
import { mailToken, tokenAddress } from '../tokens.ts';

/** A claimed mail built for sending: its addresses, threading headers and text, from the item and its ticket. */

/** The References of a mail: the ticket's first mail and its newest ones, at most this many. */
const MAX_REFERENCES = 10;

/** A claimed mail, built: what to send and what a sent mail's Message-IDs are recorded as. */
export interface Built {
  mail: OutgoingMail;
  /** What the mail's Message-IDs stand for in the account (threading rule 2). */
  mailId: MailIdRecord;
  /** The message (a reply), for its event. */
  message?: Message;
}

/** The mail of a claimed item: a reply (its message, its ticket's chain) or an acknowledgement. */
export async function build(
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
