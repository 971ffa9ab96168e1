import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import { createTicket } from '#lib/tickets/create-ticket.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';

/** POST /api/tickets: creates a ticket with its SLA due date, team and automatic assignment. */
export const handler = httpHandler({ route: route('createTicket'), body: true }, async (request, caller) => {
  const ticket = await createTicket(caller.accountId, request.body);
  return {
    statusCode: 201,
    body: { message: 'Ticket created successfully.', ticket: presentCreatedTicket(ticket) },
  };
});
