import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { findTicket } from '#lib/tickets/get-ticket.ts';
import { type Deleted, deleteObject } from '#lib/trash/delete.ts';
import { presentDeleted } from '#lib/trash/present.ts';

/** DELETE /api/tickets/{ticket}: to the trash, out of every list, count and sum at once; If-Match as PATCH. */
export const handler = httpHandler(
  {
    route: route('deleteTicket'),
    present: (deleted: Deleted) => presentDeleted(deleted),
    pathObject: (caller, { ticket }) => findTicket(caller.accountId, ticket ?? ''),
  },
  (request, caller) =>
    deleteObject(caller.accountId, 'ticket', request.params.ticket ?? '', {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);
