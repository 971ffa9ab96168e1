import { route } from '#functions/routes.ts';
import { httpHandler } from '#lib/http/handler.ts';
import type { HttpResult } from '#lib/http/request.ts';
import { applyMacroToTicket, type MacroResult, parseApplyMacroQuery } from '#lib/tickets/apply-macro.ts';
import { etagOf, findTicket } from '#lib/tickets/get-ticket.ts';
import { presentCreatedTicket } from '#lib/tickets/present.ts';

/**
 * POST /api/tickets/{ticket}/macros/{macro}: applies a macro in one change, answered as a PATCH is; with
 * `?dry_run=true`, what it would do, writing nothing.
 */
export const handler = httpHandler(
  {
    route: route('applyMacro'),
    present: applied,
    pathObject: (caller, { ticket }) => findTicket(caller.accountId, ticket ?? ''),
  },
  (request, caller) => {
    const { dryRun } = parseApplyMacroQuery(request.query);
    return applyMacroToTicket(caller.accountId, request.params.ticket ?? '', request.params.macro ?? '', {
      dryRun,
      ifMatch: request.header('if-match'),
      attach: request.attach,
    });
  },
);

/** The answer, kept as it is for a retry with the same Idempotency-Key: its ETag too. */
function applied({ entity: ticket, version, preview }: MacroResult): HttpResult {
  const shown = presentCreatedTicket(ticket);
  return {
    statusCode: 200,
    body: preview
      ? { message: 'Dry run: nothing was written.', ticket: shown, dry_run: preview }
      : { message: 'Ticket updated successfully.', ticket: shown },
    headers: { ETag: etagOf(version) },
  };
}
