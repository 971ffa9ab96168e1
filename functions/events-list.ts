import { route } from '#functions/routes.ts';
import { listEvents, parseEventFeedQuery } from '#lib/events/feed.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/events: the account's events after a cursor, oldest first. */
export const handler = httpHandler({ route: route('listEvents') }, async (request, caller) => ({
  statusCode: 200,
  body: await listEvents(caller.accountId, parseEventFeedQuery(request.query)),
}));
