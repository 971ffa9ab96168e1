import { route } from '#functions/routes.ts';
import { showEvent } from '#lib/events/feed.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/events/{event}: one event of the account. */
export const handler = httpHandler({ route: route('getEvent') }, async (request, caller) => ({
  statusCode: 200,
  body: { data: await showEvent(caller.accountId, request.params.event ?? '') },
}));
