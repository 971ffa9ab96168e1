import { route } from '#functions/routes.ts';
import { listInbound } from '#lib/email/inbound-log.ts';
import { httpHandler } from '#lib/http/handler.ts';

/** GET /api/email/inbound: every received mail and its outcome, newest first, a cursor page at a time. */
export const handler = httpHandler({ route: route('listInboundMail') }, async (request, caller) => ({
  statusCode: 200,
  body: await listInbound(caller.accountId, request.query),
}));
