import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';
import type { Ticket } from '#lib/tickets/types.ts';

/** POST /api/tickets: creates a ticket with its SLA due date, team and automatic assignment. */
export const handler = httpHandler(
  { route: route('createTicket'), body: true, metric: 'TicketCreated', present: created },
  (request, caller) => createTicket(caller.accountId, request.body, request.attach),
);

function created(ticket: Ticket): HttpResult {
  return {
    statusCode: 201,
    body: { message: 'Ticket created successfully.', ticket: presentCreatedTicket(ticket) },
  };
}
