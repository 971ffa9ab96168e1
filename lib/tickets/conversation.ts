import type { Timestamp } from '#lib/time.ts';
import type { ReplyCycle, Ticket } from './types.ts';

/**
 * The conversation's clock fields of a ticket (decisions.md, "Conversations" and "Reply-based service levels"):
 * what every message changes on its ticket, in the message's own commit, through conversationAfter() alone. The
 * SLA clocks are derived from these stored fields; they are never computed anywhere else.
 */
export interface ConversationState {
  /** Any message's time, internal notes included; the ticket's created_at until the first message after it. */
  lastMessageAt: Timestamp;
  /** When the requester's oldest public message not yet followed by a public agent message was written, or null. */
  waitingSince: Timestamp | null;
  /** The first public agent message's time: null until then, never changed after. */
  firstReplyAt: Timestamp | null;
  /** The next-reply clock's current or last cycle: null until one starts. */
  replyCycle: ReplyCycle | null;
}

/** What the reducer needs of a message: who wrote it, who sees it, when. */
export interface MessageFacts {
  author: 'agent' | 'requester' | 'system';
  visibility: 'public' | 'internal';
  createdAt: Timestamp;
}

/**
 * A new ticket's state: its description is its first message, written by the requester at created_at, so the
 * requester waits from then on and the last message is the description.
 */
export function conversationAtCreate(createdAt: Timestamp): ConversationState {
  return { lastMessageAt: createdAt, waitingSince: createdAt, firstReplyAt: null, replyCycle: null };
}

/** A ticket's state as stored; a ticket stored before messages existed is one with its description only. */
export function conversationOf(ticket: Ticket): ConversationState {
  return {
    lastMessageAt: ticket.lastMessageAt ?? ticket.createdAt,
    waitingSince: ticket.waitingSince === undefined ? ticket.createdAt : ticket.waitingSince,
    firstReplyAt: ticket.firstReplyAt ?? null,
    replyCycle: ticket.replyCycle ?? null,
  };
}

/**
 * The state after one message (pure):
 * - every message sets lastMessageAt; an internal note changes nothing else;
 * - a public requester message: the requester waits from it unless already waiting; when the first reply was
 *   made and the requester was not waiting, it starts a next-reply cycle;
 * - a public agent message: the first reply if none was made; the requester no longer waits; it completes the
 *   current cycle if one runs.
 * A `system` message counts as neither side's (it only moves lastMessageAt).
 */
export function conversationAfter(state: ConversationState, message: MessageFacts): ConversationState {
  const next: ConversationState = { ...state, lastMessageAt: message.createdAt };
  if (message.visibility !== 'public') return next;
  if (message.author === 'requester') {
    if (state.waitingSince !== null) return next;
    next.waitingSince = message.createdAt;
    if (state.firstReplyAt !== null) next.replyCycle = { startedAt: message.createdAt, completedAt: null };
    return next;
  }
  if (message.author === 'agent') {
    next.firstReplyAt = state.firstReplyAt ?? message.createdAt;
    next.waitingSince = null;
    if (state.replyCycle && state.replyCycle.completedAt === null) {
      next.replyCycle = { ...state.replyCycle, completedAt: message.createdAt };
    }
  }
  return next;
}
