import type { AccountConfig } from '#lib/accounts/types.ts';
import type { EventDraft } from '#lib/data/events.ts';
import type { CommitAttachment } from '#lib/data/requests/idempotency.ts';
import { createdEvent } from '#lib/events/drafts.ts';
import { createTicketFrom } from '../create-ticket.ts';
import type { CreateTicketInput } from '../schemas.ts';
import type { Ticket } from '../types.ts';
import { descriptionMessage, presentMessage } from './message.ts';
import type { PostOptions } from './post.ts';

/**
 * A requester's message on a closed ticket: a new ticket (open, `Re: <subject>` cut to 255, the same requester,
 * category, priority and custom fields, parent_uuid the closed ticket) whose description is the message, so the
 * message is its first message; created as any ticket (number, routing, assignment) with `ticket.created` and
 * `message.created` in its commit. The closed ticket does not change.
 */
export async function createFollowUp(
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
