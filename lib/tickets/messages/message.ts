import { createHash, randomBytes } from 'node:crypto';
import { parseTimestamp, type Timestamp } from '#lib/time.ts';
import { conversationOf } from '../conversation.ts';
import type { Ticket } from '../types.ts';

/**
 * A ticket's conversation (decisions.md, "Conversations"): its description, then its messages, oldest first. A
 * message is written in its ticket's own commit (the ticket's fields it changes, every index and count those
 * feed, its events), guarded by the ticket's version: the messages of a ticket are numbered in the order their
 * commits landed, and their times follow that order.
 */

export const MAX_MESSAGE_BODY = 65_536;
export const MESSAGE_VISIBILITIES = ['public', 'internal'] as const;
export const MESSAGE_AUTHORS = ['agent', 'requester'] as const;

export type MessageVisibility = (typeof MESSAGE_VISIBILITIES)[number];

/** A message as stored (lib/data/tickets/messages.ts) and as the domain speaks of it. */
export interface Message {
  id: string;
  /** Its number in the ticket's conversation: 1 is the description. */
  number: number;
  ticketUuid: string;
  author: {
    type: 'agent' | 'requester' | 'system';
    agentId: number | null;
    name: string | null;
    email: string | null;
  };
  visibility: MessageVisibility;
  channel: string;
  body: string;
  createdAt: Timestamp;
  /** A message that came by e-mail (decisions.md, "The e-mail channel"): its mail's fields, as the API shows them. */
  email?: Record<string, unknown>;
  /** Its attachments (e-mail, or copied by an import): `[{"id", "filename", "content_type", "size"}]`. */
  attachments?: Record<string, unknown>[];
  /** Where its mail is kept (never shown): the raw mail and the attachments' place (lib/email/downloads.ts). */
  source?: MailSource;
  /** An agent's reply that came by mail: the mail the service sends of it (never shown; lib/email/reply.ts). */
  outgoing?: Record<string, unknown>;
}

/** The received mail a message came from: its inbound id (its attachments' place) and its raw mail's key. */
export interface MailSource {
  inboundId: string;
  rawKey: string;
}

/** A message's mail fields, kept on the ticket for its description (the description is derived, never stored). */
export interface MailFields {
  email: Record<string, unknown>;
  attachments: Record<string, unknown>[];
  source?: MailSource;
}

/**
 * `msg_` + the message's number in its ticket (10 digits: its sort key) + 16 hex characters, random for a posted
 * message and the ticket's own for its description, so an id names one message of one ticket and an id of
 * another ticket's message is a 404.
 */
export const MESSAGE_ID_PATTERN = /^msg_\d{10}[0-9a-f]{16}$/;

export const messageId = (number: number, tail: string) => `msg_${String(number).padStart(10, '0')}${tail}`;
const descriptionTail = (ticketUuid: string) =>
  createHash('sha256').update(`description:${ticketUuid}`).digest('hex').slice(0, 16);
export const numberOfMessageId = (id: string): number | undefined =>
  MESSAGE_ID_PATTERN.test(id) ? Number(id.slice(4, 14)) : undefined;

/** The ticket's description as its first message (derived from the ticket, never stored twice). */
export function descriptionMessage(ticket: Ticket): Message {
  return {
    id: messageId(1, descriptionTail(ticket.uuid)),
    number: 1,
    ticketUuid: ticket.uuid,
    author: ticket.descriptionAuthor ?? {
      type: 'requester',
      agentId: null,
      name: ticket.requester.name,
      email: ticket.requester.email,
    },
    visibility: 'public',
    channel: ticket.channel,
    body: ticket.description,
    createdAt: ticket.createdAt,
    ...(ticket.descriptionEmail ?? {}),
  };
}

export function presentMessage(m: Message) {
  return {
    id: m.id,
    ticket_uuid: m.ticketUuid,
    author: { type: m.author.type, agent_id: m.author.agentId, name: m.author.name, email: m.author.email },
    visibility: m.visibility,
    channel: m.channel,
    body: m.body,
    created_at: m.createdAt,
    ...(m.email ? { email: m.email } : {}),
    // An imported message that was no mail lists its copied attachments too (lib/imports/attachments.ts).
    ...(m.email || (m.attachments?.length ?? 0) > 0 ? { attachments: m.attachments ?? [] } : {}),
  };
}

/** A message the service is to e-mail (its mail's delivery is queued). */
export const isQueuedMail = (m: Message) =>
  (m.email?.delivery as { status?: string } | undefined)?.status === 'queued';

/**
 * Where the next message of a ticket goes: its number (one more than the conversation's), a new id, and its time,
 * later than every message before it whatever clock the host reads (a post's message, a rule's note or reply).
 */
export function nextMessagePlace(
  ticket: Ticket,
  nowUs: number,
): { number: number; id: string; createdUs: number } {
  const number = (ticket.messageCount ?? 1) + 1;
  const createdUs = Math.max(nowUs, parseTimestamp(conversationOf(ticket).lastMessageAt) + 1);
  return { number, id: messageId(number, randomBytes(8).toString('hex')), createdUs };
}
