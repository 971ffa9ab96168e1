import { route } from '#functions/routes.ts';
import { findDeal } from '#lib/deals/get-deal.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { type Deleted, deleteObject } from '#lib/trash/delete.ts';
import { presentDeleted } from '#lib/trash/present.ts';

/** DELETE /api/deals/{deal}: to the trash, out of every list, count and sum at once; If-Match as PATCH. */
export const handler = httpHandler(
  {
    route: route('deleteDeal'),
    present: (deleted: Deleted) => presentDeleted(deleted),
    pathObject: (caller, { deal }) => findDeal(caller.accountId, deal ?? ''),
  },
  (request, caller) =>
    deleteObject(caller.accountId, 'deal', request.params.deal ?? '', {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
