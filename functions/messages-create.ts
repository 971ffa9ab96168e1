import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { etagOf, findTicket } from '#lib/tickets/get-ticket.ts';
import { presentMessage } from '#lib/tickets/messages/message.ts';
import { type MessagePosted, postMessage } from '#lib/tickets/messages/post.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';

/** POST /api/tickets/{ticket}/messages: a reply, an internal note or a requester's message, with its ticket's change. */
export const handler = httpHandler(
  {
    route: route('createMessage'),
    body: true,
    present: posted,
    pathObject: (caller, { ticket }) => findTicket(caller.accountId, ticket ?? ''),
  },
  (request, caller) =>
    postMessage(caller.accountId, request.params.ticket ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);

/** The answer, kept as it is for a retry with the same Idempotency-Key: the ticket's ETag too. */
function posted({ message, ticket, version }: MessagePosted): HttpResult {
  return {
    statusCode: 201,
    body: {
      message: 'Message added successfully.',
      data: presentMessage(message),
      ticket: presentCreatedTicket(ticket),
    },
    headers: { ETag: etagOf(version) },
  };
}
