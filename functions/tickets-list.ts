import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { parseListQuery } from '#lib/tickets/list-query.ts';
import { listTickets } from '#lib/tickets/list-tickets.ts';

/** GET /api/tickets: filtered, searched, paginated, newest first. */
export const handler = httpHandler({ route: route('listTickets') }, async (request, caller) => ({
  statusCode: 200,
  body: await listTickets(caller.accountId, parseListQuery(request.query), {
    baseUrl: request.baseUrl,
    path: request.resourcePath,
  }),
}));
