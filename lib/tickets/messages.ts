import { createHash, randomBytes } from 'node:crypto';
import * as v from 'valibot';
import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig } from '#lib/accounts/types.ts';
import type { EventDraft } from '#lib/data/events.ts';
import type { CommitAttachment } from '#lib/data/idempotency.ts';
import { getMessageItem, messagePut, queryMessages } from '#lib/data/messages.ts';
import { updateTicketItems } from '#lib/data/tickets.ts';
import type { CommitAction } from '#lib/data/transact.ts';
import { replyMail } from '#lib/email/reply.ts';
import { withInReplyTo } from '#lib/email/threading.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { param, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { optionalInteger } from '#lib/number-fields.ts';
import { formatTimestamp, nowMicros, nowMillis, parseTimestamp, type Timestamp } from '#lib/time.ts';
import { oneOf, parseInput, requiredText, sometimes } from '#lib/validation.ts';
import { updateVersioned } from '#lib/versioned-update.ts';
import { breachEvents, withLostBreaches } from './breaches.ts';
import { conversationAfter, conversationOf } from './conversation.ts';
import { createTicketFrom } from './create-ticket.ts';
import { findTicket } from './get-ticket.ts';
import { presentCreatedTicket } from './present.ts';
import type { CreateTicketInput } from './schemas.ts';
import type { ClockState } from './sla-clocks.ts';
import { TICKET_STATUSES, type Ticket, type TicketStatus } from './types.ts';
import { applyChange } from './update-ticket.ts';

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

/** A message as stored (lib/data/messages.ts) and as the domain speaks of it. */
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
  /** Its attachments (e-mail): `[{"id", "filename", "content_type", "size"}]`. */
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

const messageId = (number: number, tail: string) => `msg_${String(number).padStart(10, '0')}${tail}`;
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
    author: { type: 'requester', agentId: null, name: ticket.requester.name, email: ticket.requester.email },
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
    ...(m.email ? { email: m.email, attachments: m.attachments ?? [] } : {}),
  };
}

/** The `createMessage` route's body (decisions.md, "Conversations"). */
export const CreateMessageSchema = v.object({
  body: requiredText('body', MAX_MESSAGE_BODY),
  visibility: oneOf('visibility', MESSAGE_VISIBILITIES),
  author: oneOf('author', MESSAGE_AUTHORS),
  agent_id: optionalInteger('agent_id'),
  status: sometimes(
    v.pipe(v.unknown(), v.picklist(TICKET_STATUSES, 'The selected status is invalid.')),
    v.picklist(TICKET_STATUSES),
  ),
});
export type CreateMessageInput = v.InferOutput<typeof CreateMessageSchema>;

/** What a message post answers: the message, and the ticket it changed (or the follow-up it opened). */
export interface MessagePosted {
  message: Message;
  ticket: Ticket;
  version: number;
}

export interface PostOptions {
  ifMatch?: string | undefined;
  attach?: ((posted: MessagePosted) => CommitAttachment) | undefined;
  /** The channel the message came by (`api` unless said). */
  channel?: Ticket['channel'] | undefined;
  /** Its mail's fields (an e-mail message), kept on the message (or on a follow-up for its description). */
  mail?: MailFields | undefined;
  /** Items written in the message's commit (or its follow-up's): the claim of its Message-ID. */
  items?: ((message: Message, ticket: Ticket) => CommitAction[]) | undefined;
  /**
   * An automatic mail, or a mail of someone who is neither the ticket's requester nor a Cc of its mail
   * (decisions.md, "The e-mail channel"): the message threads into the ticket without changing its status,
   * `waiting_since` or clocks (as an internal note, only `last_message_at` moves), and a closed ticket gets no
   * follow-up (AutomaticNotThreaded).
   */
  automatic?: boolean | undefined;
  /** A requester's message by someone else than the ticket's requester (a mail's sender): its author. */
  sender?: { name: string | null; email: string } | undefined;
  /** A mail's agent reply that is e-mailed to the requester as one posted is (an agent's authenticated mail). */
  send?: boolean | undefined;
}

/** An automatic mail met a closed ticket: it opens nothing (decisions.md), so it threads nowhere. */
export class AutomaticNotThreaded extends Error {
  constructor() {
    super('An automatic mail opens no follow-up of a closed ticket');
  }
}

const CHANGED = 'The ticket has changed since you read it (If-Match does not match its ETag).';

/**
 * The `createMessage` route. Reads the ticket (1 round trip by uuid), decides the message and the ticket after
 * it (status rules, conversation fields through conversationAfter), and commits both with the ticket's index
 * moves and the events `message.created` and `ticket.updated` in one transaction guarded by the version read.
 * Another change landing in between: with If-Match, 412; without, the message is decided again on the ticket as
 * it now is. A requester's message on a closed ticket opens a follow-up instead (its first message).
 */
export async function postMessage(
  accountId: string,
  ref: string,
  body: unknown,
  options: PostOptions = {},
): Promise<MessagePosted> {
  return postParsedMessage(accountId, ref, parseInput(CreateMessageSchema, body), options);
}

/**
 * A message of checked input: the route's, and a mail's (lib/email/receive.ts), which goes through the same
 * status rules, clocks and follow-ups.
 */
export async function postParsedMessage(
  accountId: string,
  ref: string,
  input: CreateMessageInput,
  options: PostOptions = {},
): Promise<MessagePosted> {
  const author = input.author ?? 'agent';
  const visibility = input.visibility ?? 'public';
  refuseCombinations(input, author, visibility);
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const explicitAgent = input.agent_id === undefined ? undefined : activeAgent(config, input.agent_id);
  if (input.agent_id !== undefined && !explicitAgent) {
    throw ValidationFailed.field('agent_id', 'The selected agent id is invalid.');
  }

  let message: Message | undefined;
  // The breaches the message would lose (a new next-reply cycle after a late reply): written in its commit.
  let lost: ClockState[] = [];
  const updated = await updateVersioned<Ticket>({
    read: () => findTicket(accountId, ref),
    apply: (before) => {
      lost = [];
      if (before.status === 'closed') {
        if (options.automatic) throw new AutomaticNotThreaded();
        if (author === 'agent') {
          throw ValidationFailed.field('ticket', 'The ticket is closed: a closed ticket cannot be answered.');
        }
        // The closed ticket does not change: the follow-up is created below.
        message = undefined;
        return before;
      }
      const agent = author === 'agent' ? (explicitAgent ?? assigneeAgent(config, before)) : undefined;
      const lastUs = parseTimestamp(conversationOf(before).lastMessageAt);
      // A message is later than every message before it, whatever clock the request's host reads.
      const createdUs = Math.max(nowMicros(), lastUs + 1);
      const number = (before.messageCount ?? 1) + 1;
      const id = messageId(number, randomBytes(8).toString('hex'));
      // An agent's public reply is e-mailed to the requester (a mail the service received only when `send`).
      const outgoing =
        agent && visibility === 'public' && (!options.mail || options.send)
          ? replyMail(config, before, id, options.mail)
          : undefined;
      message = {
        id,
        number,
        ticketUuid: before.uuid,
        author: agent
          ? { type: 'agent', agentId: agent.id, name: agent.name, email: agent.email }
          : {
              type: 'requester',
              agentId: null,
              ...(options.sender ?? { name: before.requester.name, email: before.requester.email }),
            },
        visibility,
        channel: options.channel ?? 'api',
        body: input.body,
        createdAt: formatTimestamp(createdUs),
        ...(options.mail ?? {}),
        ...outgoing,
      };
      const settled = options.automatic
        ? {
            ticket: {
              ...before,
              lastMessageAt: message.createdAt,
              messageCount: number,
              updatedAt: message.createdAt,
            },
            clocks: [],
          }
        : withLostBreaches(before, ticketAfter(before, message, input.status, config, createdUs), createdUs);
      lost = settled.clocks;
      refuseOversizedAnswer(message, settled.ticket);
      return settled.ticket;
    },
    write: async (before, after, version) => {
      // A reply to be mailed shows, from this commit on, the In-Reply-To its mail is sent with.
      const posted = isQueuedMail(message as Message)
        ? await withInReplyTo(accountId, before, message as Message)
        : (message as Message);
      message = posted;
      return updateTicketItems({
        accountId,
        before,
        after,
        version,
        items: [
          // A reply to e-mail is in the outbox from this commit on: sent after it, at least once.
          messagePut(accountId, { ...posted }, isQueuedMail(posted) ? nowMillis() : undefined),
          ...(options.items?.(posted, after) ?? []),
        ],
        attachment: options.attach?.({ message: posted, ticket: after, version: version + 1 }),
        event: [
          ...breachEvents(after, lost, version + 1),
          createdEvent('message', presentMessage(posted)),
          updatedEvent('ticket', presentCreatedTicket(before), presentCreatedTicket(after), version + 1),
        ],
      });
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
  if (message) return { message, ticket: updated.entity, version: updated.version };
  const followUp = await createFollowUp(accountId, config, updated.entity, input.body, options);
  return { message: descriptionMessage(followUp), ticket: followUp, version: 1 };
}

/** A message the service is to e-mail (its mail's delivery is queued). */
const isQueuedMail = (m: Message) =>
  (m.email?.delivery as { status?: string } | undefined)?.status === 'queued';

/** A lone surrogate (invalid UTF-16): stored, it would come back as U+FFFD, so it is refused. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * The answer (message and ticket) is kept whole with an Idempotency-Key in one item of at most 400 KB: a body
 * of 65,536 characters is at most 192 KB of UTF-8 (3 bytes per UTF-16 unit), which fits beside any ticket of
 * up to ~187 KB; beside a larger ticket (a long description and many long custom fields) the message is refused
 * rather than stored without its answer (docs/decisions.md, "Message size").
 */
export const MAX_MESSAGE_ANSWER_BYTES = 380 * 1024;

function refuseOversizedAnswer(message: Message, ticket: Ticket): void {
  const bytes =
    Buffer.byteLength(JSON.stringify(presentMessage(message)), 'utf8') +
    Buffer.byteLength(JSON.stringify(presentCreatedTicket(ticket)), 'utf8');
  if (bytes > MAX_MESSAGE_ANSWER_BYTES) {
    throw ValidationFailed.field(
      'body',
      'The message is too large for this ticket: the message and the ticket together must not exceed 380 KB.',
    );
  }
}

function refuseCombinations(input: CreateMessageInput, author: string, visibility: string): void {
  if (LONE_SURROGATE.test(input.body)) {
    throw ValidationFailed.field(
      'body',
      'The body field must be valid Unicode text (it holds a lone surrogate).',
    );
  }
  if (visibility === 'internal' && input.status !== undefined) {
    throw ValidationFailed.field('status', 'An internal note changes no status: set the status with PATCH.');
  }
  if (author !== 'requester') return;
  if (visibility === 'internal') {
    throw ValidationFailed.field('visibility', 'A requester cannot write an internal note.');
  }
  if (input.agent_id !== undefined) {
    throw ValidationFailed.field('agent_id', 'The agent id field is prohibited when author is requester.');
  }
  if (input.status !== undefined) {
    throw ValidationFailed.field('status', 'The status field is prohibited when author is requester.');
  }
}

const activeAgent = (config: AccountConfig, id: number) => config.agents.find((a) => a.id === id && a.active);

/** The default author of an agent's message: the ticket's assignee, when still an active agent. */
function assigneeAgent(config: AccountConfig, ticket: Ticket) {
  const agent = ticket.assignee ? activeAgent(config, ticket.assignee.id) : undefined;
  if (!agent) {
    throw ValidationFailed.field(
      'agent_id',
      'The agent id field is required when the ticket has no active assignee.',
    );
  }
  return agent;
}

/**
 * The ticket after a message (pure): the status it sets (as a PATCH of `status` would: applyChange), a
 * requester's reopen of a pending or resolved ticket, the conversation's fields, updated_at, the message count.
 * An internal note changes no status (a `status` with one is refused before).
 */
export function ticketAfter(
  before: Ticket,
  message: Message,
  status: TicketStatus | undefined,
  config: AccountConfig,
  createdUs: number,
): Ticket {
  let nextStatus = status;
  if (message.author.type === 'requester' && (before.status === 'pending' || before.status === 'resolved')) {
    nextStatus = 'open';
  }
  const moved =
    nextStatus === undefined ? before : applyChange(before, { status: nextStatus }, {}, config, createdUs);
  return {
    ...moved,
    ...conversationAfter(conversationOf(before), {
      author: message.author.type,
      visibility: message.visibility,
      createdAt: message.createdAt,
    }),
    messageCount: message.number,
    updatedAt: message.createdAt,
  };
}

/**
 * A requester's message on a closed ticket: a new ticket (open, `Re: <subject>` cut to 255, the same requester,
 * category, priority and custom fields, parent_uuid the closed ticket) whose description is the message, so the
 * message is its first message; created as any ticket (number, routing, assignment) with `ticket.created` and
 * `message.created` in its commit. The closed ticket does not change.
 */
async function createFollowUp(
  accountId: string,
  config: AccountConfig,
  closed: Ticket,
  body: string,
  options: PostOptions,
): Promise<Ticket> {
  const category = closed.category && config.categories.find((c) => c.id === closed.category?.id);
  const input: CreateTicketInput = {
    subject: `Re: ${closed.subject}`.slice(0, 255).trim(),
    description: body,
    requester_email: closed.requester.email,
    requester_name: closed.requester.name ?? undefined,
    priority: closed.priority,
    category_id: category ? category.id : undefined,
    category_slug: undefined,
    channel: options.channel ?? 'api',
    custom_fields: closed.customFields,
  };
  return createTicketFrom(accountId, input, {
    parentUuid: closed.uuid,
    descriptionEmail: options.mail,
    moreItems: options.items && ((ticket) => options.items?.(descriptionMessage(ticket), ticket) ?? []),
    oversizedField: 'body',
    attach:
      options.attach &&
      ((ticket) =>
        options.attach?.({ message: descriptionMessage(ticket), ticket, version: 1 }) as CommitAttachment),
    moreEvents: (ticket): EventDraft[] => [
      createdEvent('message', presentMessage(descriptionMessage(ticket))),
    ],
  });
}

/** The `listMessages` route's query: `after` (a message id), `limit` (1..100), `visibility`. */
export const DEFAULT_MESSAGE_LIMIT = 50;
export const MAX_MESSAGE_LIMIT = 100;
export const MessageListQueryParams = v.object({
  after: param(
    'after',
    v.pipe(v.string(), v.regex(MESSAGE_ID_PATTERN, 'The after field must be the id of a message.')),
    v.pipe(v.string(), v.maxLength(30), v.regex(MESSAGE_ID_PATTERN)),
  ),
  limit: param('limit', wholeNumber('limit', 1, MAX_MESSAGE_LIMIT), wholeNumberWire(1, MAX_MESSAGE_LIMIT)),
  visibility: param(
    'visibility',
    v.picklist(MESSAGE_VISIBILITIES, 'The selected visibility is invalid.'),
    v.picklist(MESSAGE_VISIBILITIES),
  ),
});

/**
 * One page of the conversation after `after`: `limit` messages examined (the description first, then one range
 * of the ticket's partition), those of the visibility asked for answered, so a page costs the same at 10 or
 * 100,000 messages; `next_cursor` is the last examined message's id when more follow.
 */
export async function listMessages(accountId: string, ref: string, query: Record<string, string[]>) {
  const q = parseInput(MessageListQueryParams, query);
  const limit = q.limit ?? DEFAULT_MESSAGE_LIMIT;
  const found = await findTicket(accountId, ref);
  if (!found) throw new NotFound();
  const ticket = found.entity;
  const afterNumber = q.after === undefined ? 0 : (numberOfMessageId(q.after) as number);
  const examined: Message[] = afterNumber < 1 ? [descriptionMessage(ticket)] : [];
  // One more than the page, to know whether another page follows.
  const stored = await queryMessages<Message>(
    accountId,
    ticket.uuid,
    Math.max(afterNumber, 1),
    limit + 1 - examined.length,
  );
  examined.push(...stored);
  const page = examined.slice(0, limit);
  const more = examined.length > limit;
  return {
    data: page.filter((m) => q.visibility === undefined || m.visibility === q.visibility).map(presentMessage),
    next_cursor: more ? (page.at(-1)?.id ?? null) : null,
  };
}

async function findMessage(accountId: string, ticket: Ticket, id: string): Promise<Message | undefined> {
  const number = numberOfMessageId(id);
  if (number === undefined) return undefined;
  if (number === 1) {
    const description = descriptionMessage(ticket);
    return description.id === id ? description : undefined;
  }
  const stored = await getMessageItem<Message>(accountId, ticket.uuid, number);
  return stored?.id === id ? stored : undefined;
}

/** The `getMessage` route: one message of one ticket of the account (any other: 404). */
export async function getMessage(accountId: string, ref: string, id: string): Promise<Message> {
  const found = await findTicket(accountId, ref);
  if (!found) throw new NotFound();
  const message = await findMessage(accountId, found.entity, id.trim());
  if (!message) throw new NotFound();
  return message;
}
