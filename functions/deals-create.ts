import { route } from '#functions/routes.ts';
import { createDeal } from '#lib/deals/create-deal.ts';
import { presentDeal } from '#lib/deals/present.ts';
import type { Deal } from '#lib/deals/types.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';

/** POST /api/deals: creates a deal, finding or creating its contact by e-mail. */
export const handler = httpHandler(
  { route: route('createDeal'), body: true, metric: 'DealCreated', present: created },
  (request, caller) => createDeal(caller.accountId, request.body, request.attach),
);

function created(deal: Deal): HttpResult {
  return { statusCode: 201, body: { data: presentDeal(deal) } };
}
