import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { etagOf, getTicket } from '#lib/tickets/get-ticket.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';

/** GET /api/tickets/{ticket}: one ticket by uuid or reference, with its ETag. */
export const handler = httpHandler({ route: route('getTicket') }, async (request, caller) => {
  const { entity: ticket, version } = await getTicket(caller.accountId, request.params.ticket ?? '');
  return {
    statusCode: 200,
    body: { data: presentCreatedTicket(ticket) },
    headers: { ETag: etagOf(version) },
  };
});
