import { route } from '#functions/routes.ts';
import { findDeal } from '#lib/deals/get-deal.ts';
import { presentDealDetail } from '#lib/deals/present.ts';
import { type UpdatedDeal, updateDeal } from '#lib/deals/update-deal.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { etagOf } from '#lib/versioned-update.ts';

/** PATCH /api/deals/{deal}: moves, wins, loses, reopens or edits a deal; If-Match refuses a lost update (412). */
export const handler = httpHandler(
  {
    route: route('updateDeal'),
    body: true,
    present: updated,
    pathObject: (caller, { deal }) => findDeal(caller.accountId, deal ?? ''),
  },
  (request, caller) =>
    updateDeal(caller.accountId, request.params.deal ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);

function updated({ deal, version, contact }: UpdatedDeal): HttpResult {
  return {
    statusCode: 200,
    body: { message: 'Deal updated successfully.', data: presentDealDetail(deal, contact) },
    headers: { ETag: etagOf(version) },
  };
}
