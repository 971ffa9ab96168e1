import { createHash } from 'node:crypto';
import type { Account } from '#lib/accounts/types.ts';
import { newTicketUuid } from '#lib/data/tickets/tickets.ts';
import { formatReference } from '#lib/tickets/compose-ticket.ts';
import { type ConversationState, conversationAfter, conversationOf } from '#lib/tickets/conversation.ts';
import { descriptionMessage, type Message, messageId } from '#lib/tickets/messages/message.ts';
import { breachesDue, withBreaches } from '#lib/tickets/owed-breaches.ts';
import { serviceLevelOf } from '#lib/tickets/sla.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { parseTimestamp } from '#lib/time.ts';
import type { ImportedTicket, ImportSource } from './records.ts';
import type { ResolvedTicket } from './ticket-refs.ts';

/**
 * An imported ticket and its messages as stored (pure; lib/imports/tickets.ts writes them): the source's own
 * times, status and people, its conversation's fields folded from its messages in order (so its clocks run from
 * the original times: a ticket answered late at the source shows its historic breach), and the breaches already
 * due when the import runs recorded as written, without an event: the breach runner never writes a
 * `ticket.sla_breached` for a due time before the import, and the due entry is kept only for one still ahead.
 */

export interface ComposeImport {
  account: Account;
  source: ImportSource;
  importId: string;
  record: ImportedTicket;
  resolved: ResolvedTicket;
  /** The ticket as stored, when found again (its uuid, number, breaches and provenance are kept). */
  before?: Ticket | undefined;
  /** A new ticket's number. */
  number?: number | undefined;
  /** Each source message's number in the conversation (1: the description). */
  numbers: number[];
  nowUs: number;
}

export interface ComposedImport {
  ticket: Ticket;
  /** Every message but the description (which the ticket is), in source order. */
  messages: Message[];
}

/** An imported message's id: its number and a tail made of the ticket and its source id (the same on a re-run). */
const importedMessageId = (ticketUuid: string, number: number, sourceId: string) =>
  messageId(
    number,
    createHash('sha256').update(`import:${ticketUuid}:${sourceId}`).digest('hex').slice(0, 16),
  );

export function composeImported(p: ComposeImport): ComposedImport {
  const { record, resolved, before } = p;
  const createdUs = parseTimestamp(record.createdAt);
  const number = before?.number ?? (p.number as number);
  const uuid = before?.uuid ?? newTicketUuid(createdUs, number);
  const priority = record.priority ?? p.account.defaultPriority;
  const first = record.messages[0];
  const firstAuthor = resolved.authors[0];
  const { dueAt, slaTargets } = serviceLevelOf(p.account, { priority, categorySlug: null, createdUs });
  // A ticket found again goes on from its conversation as stored (messages posted here since stay counted): only
  // the messages it lacks (numbered after its last) are folded in; a new one starts before its description.
  const storedCount = before ? (before.messageCount ?? 1) : 0;
  let state: ConversationState = before
    ? conversationOf(before)
    : { lastMessageAt: record.createdAt, waitingSince: null, firstReplyAt: null, replyCycle: null };
  const messages: Message[] = [];
  record.messages.forEach((m, i) => {
    const author = resolved.authors[i] ?? { type: 'system', agentId: null, name: null, email: null };
    const visibility = i > 0 && m.internal ? 'internal' : 'public';
    // The description is written at the ticket's creation, whatever time its comment carries.
    const createdAt = i === 0 ? record.createdAt : m.createdAt;
    const n = p.numbers[i] as number;
    if (n > storedCount) {
      const after = conversationAfter(state, { author: author.type, visibility, createdAt });
      state = { ...after, lastMessageAt: latest(state.lastMessageAt, createdAt) };
    }
    if (i === 0) return;
    messages.push({
      id: importedMessageId(uuid, n, m.sourceId),
      number: n,
      ticketUuid: uuid,
      author,
      visibility,
      channel: m.messageId ? 'email' : 'api',
      body: m.body,
      createdAt,
      ...(m.messageId ? { email: importedEmail(m.messageId, author, record.subject), attachments: [] } : {}),
    });
  });
  if (!before && record.messages.length === 0) state = { ...state, waitingSince: record.createdAt };
  const described =
    firstAuthor && (firstAuthor.type !== 'requester' || firstAuthor.email !== resolved.requester.email);
  const ticket: Ticket = {
    uuid,
    number,
    reference: before?.reference ?? formatReference(p.account, number),
    subject: record.subject,
    description: first?.body ?? '',
    status: record.status,
    priority,
    category: before?.category ?? null,
    channel: first?.messageId ? 'email' : 'api',
    requester: resolved.requester,
    assignee: resolved.assignee,
    team: resolved.team,
    ...(resolved.organization ? { organization: resolved.organization } : {}),
    parentUuid: null,
    customFields: record.customFields,
    tags: record.tags,
    dueAt,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
    resolvedAt: record.resolvedAt,
    closedAt: record.closedAt,
    ...state,
    messageCount: Math.max(before?.messageCount ?? 1, ...p.numbers, 1),
    slaTargets,
    slaBreaches: before?.slaBreaches ?? null,
    importedFrom: before?.importedFrom ?? { source: p.source, id: record.sourceId, importId: p.importId },
    ...(described && firstAuthor ? { descriptionAuthor: firstAuthor } : {}),
    ...(first?.messageId && firstAuthor
      ? {
          descriptionEmail: {
            email: importedEmail(first.messageId, firstAuthor, record.subject),
            attachments: [],
          },
        }
      : {}),
  };
  // Clocks past their due time when the import runs are recorded as breached, silently (no event, no entry).
  return { ticket: withBreaches(ticket, breachesDue(ticket, p.nowUs)), messages };
}

/**
 * An imported e-mail comment's mail fields, as the API shows a message's `email`: its Message-ID (claimed, so a
 * reply to it threads in), its author's address; what the source does not give is empty, and `threading` null (the
 * service did not thread it).
 */
function importedEmail(messageId: string, author: Message['author'], subject: string) {
  return {
    message_id: messageId,
    from: { email: author.email ?? '', name: author.name },
    to: [],
    cc: [],
    subject: subject.length > 255 ? `${subject.slice(0, 254)}…` : subject,
    in_reply_to: null,
    threading: null,
    automatic: null,
    quoted_text_removed: false,
  };
}

const latest = (a: string, b: string) => (a > b ? a : b);

/** The description's message id (its source key names it). */
export const descriptionId = (ticket: Ticket) => descriptionMessage(ticket).id;
