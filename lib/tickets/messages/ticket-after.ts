import type { AccountConfig } from '#lib/accounts/types.ts';
import { applyChange } from '../apply-change.ts';
import { withLostBreaches } from '../breaches.ts';
import { conversationAfter, conversationOf } from '../conversation.ts';
import type { ClockState } from '../sla-clocks.ts';
import type { Ticket, TicketStatus } from '../types.ts';
import type { Message } from './message.ts';

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
 * The ticket a message leaves, and the breaches it would lose (written in its commit: lib/tickets/breaches.ts). An
 * automatic mail changes no status, `waiting_since` or clock: only `last_message_at` moves (PostOptions.automatic).
 */
export function settledAfter(
  before: Ticket,
  { message, createdUs }: { message: Message; createdUs: number },
  status: TicketStatus | undefined,
  config: AccountConfig,
  automatic: boolean | undefined,
): { ticket: Ticket; clocks: ClockState[] } {
  if (automatic) {
    return {
      ticket: {
        ...before,
        lastMessageAt: message.createdAt,
        messageCount: message.number,
        updatedAt: message.createdAt,
      },
      clocks: [],
    };
  }
  return withLostBreaches(before, ticketAfter(before, message, status, config, createdUs), createdUs);
}
