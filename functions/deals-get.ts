import { route } from '#functions/routes.ts';
import { getDeal } from '#lib/deals/get-deal.ts';
import { presentDealDetail } from '#lib/deals/present.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { etagOf } from '#lib/versioned-update.ts';

/** GET /api/deals/{deal}: one deal by uuid, with its contact as it is now and its ETag. */
export const handler = httpHandler({ route: route('getDeal') }, async (request, caller) => {
  const { entity, version, contact } = await getDeal(caller.accountId, request.params.deal ?? '');
  return {
    statusCode: 200,
    body: { data: presentDealDetail(entity, contact) },
    headers: { ETag: etagOf(version) },
  };
});
