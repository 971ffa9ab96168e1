import { queryMessagesBefore } from '#lib/data/tickets/messages.ts';
import type { Message } from '#lib/tickets/messages/message.ts';
import type { Ticket } from '#lib/tickets/types.ts';

/**
 * A ticket's mail thread (decisions.md, "The e-mail channel": a sent mail's In-Reply-To and References are the
 * ticket's mail chain): what the outbox sends a reply with, and what the reply shows from its commit on.
 */

/** The messages before a reply whose mails make its chain: the newest this many. */
export const MAIL_CHAIN_DEPTH = 20;

/**
 * The Message-IDs of the ticket's mail before a message, oldest first: the mail that opened it, then the
 * mails among the messages before it (`newest`, newest first as read, at most MAIL_CHAIN_DEPTH) (received or sent;
 * for sent mail also the provider's id is claimed, but a thread is named by the ids its mails carried).
 */
export function mailChain(ticket: Ticket, newest: Message[]): string[] {
  const opening = ticket.descriptionEmail?.email?.message_id as string | null | undefined;
  const ids = [...newest]
    .reverse()
    .map((m) => m.email?.message_id as string | null | undefined)
    .filter((id): id is string => typeof id === 'string' && id.length > 0);
  return [...new Set([...(opening ? [opening] : []), ...ids])];
}

/**
 * A reply to be mailed, with the In-Reply-To its mail will carry (the chain's last: the newest mail of the
 * ticket before it), decided in its commit: the answer, its `message.created` event and every read show the
 * header the mail has, before it is sent as after. One Query of the messages before it (strongly consistent:
 * every one of them committed before the ticket version the reply's commit is guarded by).
 */
export async function withInReplyTo(accountId: string, ticket: Ticket, reply: Message): Promise<Message> {
  const [threaded] = await threadedInCommit(accountId, ticket, [reply], () => true);
  return threaded as Message;
}

/**
 * The messages of one commit, in order, each `toSend` (a reply to be mailed) with its In-Reply-To: the chain of the
 * messages committed before the first of them (one Query, none when none is to be sent) and of those before it in
 * the commit (a change's message, then its rules' notes and replies: lib/rules/ticket-effects.ts).
 */
export async function threadedInCommit(
  accountId: string,
  ticket: Ticket,
  messages: Message[],
  toSend: (message: Message) => boolean,
): Promise<Message[]> {
  const first = messages[0];
  if (!first || !messages.some(toSend)) return messages;
  const stored = await queryMessagesBefore<Message>(accountId, ticket.uuid, first.number, MAIL_CHAIN_DEPTH);
  return messages.map((message, i) => {
    if (!toSend(message)) return message;
    const newest = [...messages.slice(0, i).reverse(), ...stored].slice(0, MAIL_CHAIN_DEPTH);
    const inReplyTo = mailChain(ticket, newest).at(-1) ?? null;
    // An agent's reply that came by mail shows the mail received (its own In-Reply-To); what is sent is `outgoing`.
    if (message.outgoing) return { ...message, outgoing: { ...message.outgoing, in_reply_to: inReplyTo } };
    return { ...message, email: { ...message.email, in_reply_to: inReplyTo } };
  });
}
