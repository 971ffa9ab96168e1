import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { presentMessage } from '#lib/tickets/messages/message.ts';
import { getMessage } from '#lib/tickets/messages/read.ts';

/** GET /api/tickets/{ticket}/messages/{message}: one message of the ticket. */
export const handler = httpHandler({ route: route('getMessage') }, async (request, caller) => ({
  statusCode: 200,
  body: {
    data: presentMessage(
      await getMessage(caller.accountId, request.params.ticket ?? '', request.params.message ?? ''),
    ),
  },
}));
