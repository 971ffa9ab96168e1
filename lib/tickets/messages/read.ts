import * as v from 'valibot';
import { getMessageItem, queryMessages } from '#lib/data/tickets/messages.ts';
import { NotFound } from '#lib/errors.ts';
import { param, wholeNumber, wholeNumberWire } from '#lib/list-params.ts';
import { parseInput } from '#lib/validation.ts';
import { findTicket } from '../get-ticket.ts';
import type { Ticket } from '../types.ts';
import {
  descriptionMessage,
  MESSAGE_ID_PATTERN,
  MESSAGE_VISIBILITIES,
  type Message,
  numberOfMessageId,
  presentMessage,
} from './message.ts';

/** Reading a ticket's conversation: a page of it (`listMessages`), one message (`getMessage`). */

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
