import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { listMessages } from '#lib/tickets/messages/read.ts';

/** GET /api/tickets/{ticket}/messages: the conversation, oldest first, a cursor page at a time. */
export const handler = httpHandler(
  {
    route: route('listMessages'),
    pathObject: (caller, { ticket }) => findTicket(caller.accountId, ticket ?? ''),
  },
  async (request, caller) => ({
    statusCode: 200,
    body: await listMessages(caller.accountId, request.params.ticket ?? '', request.query),
  }),
);
