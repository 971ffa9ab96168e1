import { getAccountConfig } from '#lib/accounts/config-cache.ts';
import type { AccountConfig, Agent } from '#lib/accounts/types.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import type { CommitAction } from '#lib/data/store/transact.ts';
import { updateTicketItems } from '#lib/data/tickets/tickets.ts';
import { replyMail } from '#lib/email/reply.ts';
import { threadedInCommit } from '#lib/email/threading.ts';
import { NotFound, ValidationFailed } from '#lib/errors.ts';
import { getActiveRules } from '#lib/rules/cache.ts';
import { changeRules, type RulesApplied, threadRuleMessages } from '#lib/rules/in-change.ts';
import { formatTimestamp, nowMicros } from '#lib/time.ts';
import { parseInput } from '#lib/validation.ts';
import { firstReadBeside, updateVersioned } from '#lib/versioned-update.ts';
import { findTicket } from '../get-ticket.ts';
import type { ClockState } from '../sla-clocks.ts';
import { againIfTeamGone } from '../team-gone.ts';
import type { Ticket } from '../types.ts';
import { messageCommit, messageContext } from './commit.ts';
import { createFollowUp } from './follow-up.ts';
import {
  descriptionMessage,
  isQueuedMail,
  type MailFields,
  type Message,
  nextMessagePlace,
} from './message.ts';
import {
  assigneeAgent,
  type CreateMessageInput,
  CreateMessageSchema,
  namedAgent,
  refuseCombinations,
  refuseOversizedAnswer,
} from './post-rules.ts';
import { settledAfter } from './ticket-after.ts';

/** Posting a message to a ticket (the `createMessage` route, and a received mail's message). */

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
 * A message of checked input: the route's, and a mail's (lib/email/receive/existing-ticket.ts), which goes through
 * the same status rules, clocks and follow-ups.
 */
export function postParsedMessage(
  accountId: string,
  ref: string,
  input: CreateMessageInput,
  options: PostOptions = {},
): Promise<MessagePosted> {
  // A requester's reopen that met its team's deletion: decided again on the configuration as it is now.
  return againIfTeamGone(accountId, () => postOnce(accountId, ref, input, options));
}

async function postOnce(
  accountId: string,
  ref: string,
  input: CreateMessageInput,
  options: PostOptions,
): Promise<MessagePosted> {
  const author = input.author ?? 'agent';
  const visibility = input.visibility ?? 'public';
  refuseCombinations(input, author, visibility);
  // The current configuration waits for the request's rate count: the ticket's first read runs beside it.
  const read = firstReadBeside(() => findTicket(accountId, ref));
  // The account's rules beside it (the container's cache: no round trip while it is warm).
  const rules = getActiveRules(accountId);
  rules.catch(() => undefined);
  const config = await getAccountConfig(accountId);
  if (!config) throw new NotFound();
  const writer: Writer = { author, visibility, agent: namedAgent(config, input.agent_id) };

  let message: Message | undefined;
  // The breaches the message would lose (a new next-reply cycle after a late reply), and what its rules did:
  // written in its commit.
  let lost: ClockState[] = [];
  let ruled: RulesApplied | undefined;
  const updated = await updateVersioned<Ticket>({
    read,
    apply: async (before) => {
      lost = [];
      if (before.status === 'closed') {
        refuseOnClosed(author, options);
        // The closed ticket does not change: the follow-up is created below.
        message = undefined;
        return before;
      }
      const composed = composeMessage(config, before, input.body, writer, options);
      message = composed.message;
      const settled = settledAfter(before, composed, input.status, config, options.automatic);
      ruled = await changeRules({
        accountId,
        config,
        rules: await rules,
        before,
        after: settled.ticket,
        context: messageContext(composed.message, options, composed.createdUs),
      });
      lost = [...settled.clocks, ...ruled.clocks];
      refuseOversizedAnswer(message, ruled.ticket);
      return ruled.ticket;
    },
    write: async (before, after, version) => {
      // A reply to be mailed shows, from this commit on, the In-Reply-To its mail is sent with (its rules' too).
      const own = message as Message;
      const [posted] = await threadedInCommit(accountId, before, [own], isQueuedMail);
      message = posted as Message;
      const applied = await threadRuleMessages(accountId, before, ruled as RulesApplied, [message]);
      return updateTicketItems(
        messageCommit({ accountId, before, after, version }, message, lost, options, applied),
      );
    },
    ifMatch: options.ifMatch,
    changedMessage: CHANGED,
  });
  if (message) return { message, ticket: updated.entity, version: updated.version };
  const followUp = await createFollowUp(accountId, config, updated.entity, input.body, options);
  return { message: descriptionMessage(followUp), ticket: followUp, version: 1 };
}

/** Who writes a message: its author, its visibility, and the agent it names (`agent_id`), if any. */
interface Writer {
  author: 'agent' | 'requester';
  visibility: Message['visibility'];
  agent: Agent | undefined;
}

/** A closed ticket takes no agent's message and no automatic mail; a requester's opens a follow-up. */
function refuseOnClosed(author: Writer['author'], options: PostOptions): void {
  if (options.automatic) throw new AutomaticNotThreaded();
  if (author === 'agent') {
    throw ValidationFailed.field('ticket', 'The ticket is closed: a closed ticket cannot be answered.');
  }
}

/** The message posted on a ticket as it is now: its number, id, author and time, and the mail it is sent as. */
function composeMessage(
  config: AccountConfig,
  before: Ticket,
  body: string,
  writer: Writer,
  options: PostOptions,
): { message: Message; createdUs: number } {
  const agent = writer.author === 'agent' ? (writer.agent ?? assigneeAgent(config, before)) : undefined;
  const { number, id, createdUs } = nextMessagePlace(before, nowMicros());
  // An agent's public reply is e-mailed to the requester (a mail the service received only when `send`).
  const outgoing =
    agent && writer.visibility === 'public' && (!options.mail || options.send)
      ? replyMail(config, before, id, options.mail)
      : undefined;
  const message: Message = {
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
    visibility: writer.visibility,
    channel: options.channel ?? 'api',
    body,
    createdAt: formatTimestamp(createdUs),
    ...(options.mail ?? {}),
    ...outgoing,
  };
  return { message, createdUs };
}
