import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { etagOf, findTicket } from '#lib/tickets/get-ticket.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import type { Ticket } from '#lib/tickets/types.ts';
import { updateTicket } from '#lib/tickets/update-ticket.ts';
import type { Versioned } from '#lib/versioned-update.ts';

/** PATCH /api/tickets/{ticket}: changes a ticket; If-Match refuses a lost update (412). */
export const handler = httpHandler(
  {
    route: route('updateTicket'),
    body: true,
    present: updated,
    pathObject: (caller, { ticket }) => findTicket(caller.accountId, ticket ?? ''),
  },
  (request, caller) =>
    updateTicket(caller.accountId, request.params.ticket ?? '', request.body, {
      ifMatch: request.header('if-match'),
      attach: request.attach,
    }),
);

/** The answer, kept as it is for a retry with the same Idempotency-Key: its ETag too. */
function updated({ entity: ticket, version }: Versioned<Ticket>): HttpResult {
  return {
    statusCode: 200,
    body: { message: 'Ticket updated successfully.', ticket: presentCreatedTicket(ticket) },
    headers: { ETag: etagOf(version) },
  };
}
