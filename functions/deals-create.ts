import { route } from '#functions/routes.ts';
import { createDeal } from '#lib/deals/create-deal.ts';
import { presentDeal } from '#lib/deals/present.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** POST /api/deals: creates a deal, finding or creating its contact by e-mail. */
export const handler = httpHandler({ route: route('createDeal'), body: true }, async (request, caller) => ({
  statusCode: 201,
  body: { data: presentDeal(await createDeal(caller.accountId, request.body)) },
}));
