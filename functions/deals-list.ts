import { route } from '#functions/routes.ts';
import { listDeals } from '#lib/deals/list-deals.ts';
import { parseDealListQuery } from '#lib/deals/list-query.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/deals: filtered, searched, paginated, newest first. */
export const handler = httpHandler({ route: route('listDeals') }, async (request, caller) => ({
  statusCode: 200,
  body: await listDeals(caller.accountId, parseDealListQuery(request.query), {
    baseUrl: request.baseUrl,
    path: request.resourcePath,
  }),
}));
