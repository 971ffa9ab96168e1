import { messagePut } from '#lib/data/tickets/messages.ts';
import type { TicketUpdate } from '#lib/data/tickets/tickets.ts';
import { createdEvent, updatedEvent } from '#lib/events/drafts.ts';
import { type ChangeRules, type RulesApplied, ruleItems, withRuleEvents } from '#lib/rules/in-change.ts';
import { nowMillis } from '#lib/time.ts';
import { breachEvents } from '../breaches.ts';
import { presentCreatedTicket } from '../present.ts';
import type { ClockState } from '../sla-clocks.ts';
import { isQueuedMail, type Message, presentMessage } from './message.ts';
import type { PostOptions } from './post.ts';

/** A posted message's commit, and what its `message` rules see of it (post.ts posts it). */

/** The message's commit: the ticket's change, the message (in the outbox when mailed), its events. */
export function messageCommit(
  change: Pick<TicketUpdate, 'accountId' | 'before' | 'after' | 'version'>,
  posted: Message,
  lost: ClockState[],
  options: PostOptions,
  ruled: RulesApplied,
): TicketUpdate {
  const { accountId, before, after, version } = change;
  return {
    ...change,
    items: [
      // A reply to e-mail is in the outbox from this commit on: sent after it, at least once.
      messagePut(accountId, { ...posted }, isQueuedMail(posted) ? nowMillis() : undefined),
      ...(options.items?.(posted, after) ?? []),
      ...ruleItems(accountId, ruled),
    ],
    busyCondition: ruled.picked,
    attachment: options.attach?.({ message: posted, ticket: after, version: version + 1 }),
    event: withRuleEvents(
      [
        ...breachEvents(after, lost, version + 1),
        createdEvent('message', presentMessage(posted)),
        updatedEvent('ticket', presentCreatedTicket(before), presentCreatedTicket(after), version + 1),
      ],
      ruled,
    ),
  };
}

/** What a message's `message` rules see of it: how it came, whether it is automatic mail, who wrote it. */
export function messageContext(
  message: Message,
  options: PostOptions,
  nowUs: number,
): ChangeRules['context'] {
  return {
    kind: 'message',
    channel: options.channel === 'email' ? 'email' : 'api',
    automatic: options.automatic === true,
    message: { author: message.author.type, visibility: message.visibility, body: message.body },
    nowUs,
  };
}
